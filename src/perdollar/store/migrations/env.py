"""Alembic environment: always runs on the connection that :mod:`perdollar.store.migrate` passes."""

from __future__ import annotations

from alembic import context

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable through the alembic CLI
    raise RuntimeError("perdollar's migrations run through perdollar.store.open_store(url)")

# render_as_batch: SQLite cannot ALTER most things, so column changes copy the table.
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
