"""Checks made before a store is changed: the database is perdollar's (or empty), and it can be
written. Both refuse in one line and leave the database exactly as it was."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from perdollar.errors import PerdollarError
from perdollar.store.engine import BUSY_TIMEOUT_MS, with_retry

# A database holding these is perdollar's; one holding other tables and not these is not.
PERDOLLAR_MARKERS = frozenset({"alembic_version", "measurements"})


def refuse_foreign_tables(table_names: Iterable[str], display_url: str) -> None:
    """Refuse a database that holds tables but not perdollar's: migrating it would add our tables
    (and an ``alembic_version`` row) to another application's data."""
    names = {name for name in table_names if not name.startswith("sqlite_")}
    if not names or names >= PERDOLLAR_MARKERS:
        return
    shown = ", ".join(sorted(names)[:5]) + (", …" if len(names) > 5 else "")
    raise PerdollarError(
        f"{display_url} is not a perdollar store (it holds other tables: {shown}); it was left unchanged",
        "point --store or PERDOLLAR_STORE at a new file or at an existing perdollar store",
    )


def refuse_foreign_sqlite(path: Path, display_url: str) -> None:
    """Read a SQLite file's table list through a read-only connection, before the engine's first
    connection switches the file to WAL: a file that is not perdollar's must stay as it was."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
            names = [row[0] for row in rows]
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise PerdollarError(
            f"{display_url} is not a usable perdollar store ({error}); it was left unchanged",
            "point --store or PERDOLLAR_STORE at a new file or at an existing perdollar store",
        ) from None
    refuse_foreign_tables(names, display_url)


def probe_write(engine: Engine, display_url: str) -> None:
    """Make a write that changes nothing and roll it back: a read-only file, folder or database
    role is found before minutes of work whose result the store would then refuse."""

    def attempt() -> None:
        with engine.connect().execution_options(write=True) as connection:
            transaction = connection.begin()
            try:
                connection.execute(sa.text("UPDATE alembic_version SET version_num = version_num"))
            finally:
                transaction.rollback()

    try:
        with_retry(attempt, budget_s=BUSY_TIMEOUT_MS / 1000)
    except (DBAPIError, sqlite3.Error) as error:
        reason = " ".join(str(getattr(error, "orig", error)).split())
        raise PerdollarError(
            f"the store {display_url} cannot be written ({reason})",
            "make it writable, point --store or PERDOLLAR_STORE elsewhere, or pass --no-store",
        ) from None
