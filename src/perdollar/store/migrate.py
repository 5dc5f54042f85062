"""Bring a store's schema to the newest revision, in place, once, even with many processes.

The common case (already at the newest revision) is one query and never imports Alembic,
which keeps `perdollar bench` quick to store its result.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perdollar.errors import PerdollarError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")
# The newest revision in migrations/versions (a test checks that they agree).
HEAD = "0002"
# Some fixed number: PostgreSQL advisory locks are keyed by integers.
_PG_LOCK_KEY = 0x7065_7264


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


def known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    return {script.revision for script in ScriptDirectory.from_config(alembic_config()).walk_revisions()}


def current_revision(engine: Engine) -> str | None:
    """The store's schema revision; None for an empty database."""
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()


def ensure_schema(engine: Engine, sqlite_file: Path | None) -> None:
    """Upgrade to head unless already there; refuse a store written by a newer perdollar."""
    current = current_revision(engine)
    if current == HEAD:
        return
    from perdollar.store.guard import refuse_foreign_tables

    with engine.connect() as connection:  # another application's tables (its alembic_version too)
        refuse_foreign_tables(sa.inspect(connection).get_table_names(), _display(engine))
    if current is not None and current not in known_revisions():
        raise PerdollarError(
            f"the store was written by a newer perdollar (schema {current}, this one knows up to {HEAD})",
            "upgrade perdollar (pip install -U perdollar) or point --store at another database",
        )
    from alembic.command import upgrade

    with _migration_lock(engine, sqlite_file):
        if current_revision(engine) == HEAD:  # another process migrated while we waited
            return
        with engine.begin() as connection:
            config = alembic_config()
            config.attributes["connection"] = connection
            upgrade(config, "head")


def _display(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


@contextmanager
def _migration_lock(engine: Engine, sqlite_file: Path | None) -> Iterator[None]:
    if sqlite_file is not None:
        lock_path = sqlite_file.with_name(sqlite_file.name + ".migrate-lock")
        with open(lock_path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    if engine.dialect.name == "postgresql":
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": _PG_LOCK_KEY})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(sa.text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_LOCK_KEY})
                connection.commit()
        return
    yield
