"""Engines that behave under concurrent writers: SQLite in WAL mode with a busy timeout and
immediate write transactions; PostgreSQL (or anything else SQLAlchemy speaks) as configured.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.pool import StaticPool

from perdollar.errors import PerdollarError
from perdollar.files import why_not_writable

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
# How long a writer keeps retrying a busy/locked database before giving up with an error.
RETRY_BUDGET_S = 120.0


def parse_url(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError as error:
        raise PerdollarError(
            f"store URL {url!r} is not a SQLAlchemy URL",
            "use e.g. sqlite:///results.sqlite or postgresql+psycopg://user@host/db",
        ) from error
    if parsed.drivername == "postgresql":  # the bare scheme means psycopg2, which we do not ship
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def sqlite_path(url: URL) -> Path | None:
    """The database file of a SQLite URL (None for other backends and in-memory databases)."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def make_engine(url: URL) -> Engine:
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    try:
        return sa.create_engine(url, pool_pre_ping=True, future=True)
    except NoSuchModuleError as error:
        raise PerdollarError(
            f"no database driver for {url.drivername!r}",
            "for PostgreSQL install psycopg (pip install 'perdollar[postgres]') and use postgresql+psycopg://",
        ) from error
    except ModuleNotFoundError as error:
        raise PerdollarError(
            f"the driver for {url.drivername!r} is not installed ({error.name})",
            f"pip install {error.name}",
        ) from error


def _sqlite_engine(url: URL) -> Engine:
    path = sqlite_path(url)
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise PerdollarError(
                f"cannot open the store {url.render_as_string(hide_password=True)}: the folder "
                f"{path.parent} cannot be made ({why_not_writable(error)})",
                "point --store or PERDOLLAR_STORE at a file in a folder you can write to",
            ) from None
        engine = sa.create_engine(url, connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})
    else:  # one shared connection, or every checkout would see a new empty database
        engine = sa.create_engine(url, connect_args={"check_same_thread": False}, poolclass=StaticPool)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: sqlite3.Connection, _record: object) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite would defer it).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        if path is not None:
            _switch_to_wal(cursor)
        cursor.execute("PRAGMA foreign_keys=ON")
        # NORMAL is durable against a killed process in WAL mode; only a power cut can lose the
        # last transactions, never consistency.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        # Writers take the write lock up front, so two writers never deadlock upgrading a read
        # lock (which busy_timeout cannot resolve).
        immediate = connection.get_execution_options().get("write", False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _switch_to_wal(cursor: sqlite3.Cursor) -> None:
    """Put the file in WAL mode, waiting as long as any other lock would be waited for.

    Several processes opening a new store at once all switch its journal mode, and SQLite answers
    "database is locked" to that at once instead of calling the busy handler: retried here, or one
    of sixteen concurrent writers failed to open the store about once in eighty.
    """
    with_retry(lambda: cursor.execute("PRAGMA journal_mode=WAL"), budget_s=BUSY_TIMEOUT_MS / 1000)


def is_transient(error: BaseException) -> bool:
    """A busy/locked SQLite database, or a PostgreSQL serialization failure or deadlock (the driver's
    own SQLite error too, as raised before SQLAlchemy wraps it, e.g. while connecting)."""
    if not isinstance(error, OperationalError | DBAPIError | sqlite3.OperationalError):
        return False
    text = str(getattr(error, "orig", error)).lower()
    code = getattr(getattr(error, "orig", None), "sqlstate", None)
    return (
        "database is locked" in text
        or "database is busy" in text
        or "sqlite_busy" in text
        or code in ("40001", "40P01")
    )


def with_retry(operation: Callable[[], T], *, budget_s: float = RETRY_BUDGET_S) -> T:
    """Run ``operation`` (one whole transaction) again while the database is transiently busy."""
    deadline = time.monotonic() + budget_s
    delay = 0.05
    while True:
        try:
            return operation()
        except (OperationalError, DBAPIError, sqlite3.OperationalError) as error:
            if not is_transient(error) or time.monotonic() > deadline:
                raise
        time.sleep(delay * (0.5 + random.random()))
        delay = min(delay * 2, 2.0)
