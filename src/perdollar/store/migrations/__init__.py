"""Alembic migrations of the results store (run programmatically by :func:`perdollar.store.open_store`)."""
