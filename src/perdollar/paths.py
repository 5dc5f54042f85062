"""Where perdollar keeps the user's data (results store, refreshed catalog snapshots).

``PERDOLLAR_HOME`` overrides the platform's user data directory; tests point it at a
temporary folder so they never touch a real user's files.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def data_dir() -> Path:
    override = os.environ.get("PERDOLLAR_HOME")
    base = Path(override) if override else Path(platformdirs.user_data_dir("perdollar", appauthor=False))
    base.mkdir(parents=True, exist_ok=True)
    return base


def catalog_snapshot_dir() -> Path:
    path = data_dir() / "catalog"
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_store_url() -> str:
    """The results store: ``PERDOLLAR_STORE`` (any SQLAlchemy URL) or a SQLite file."""
    return os.environ.get("PERDOLLAR_STORE") or f"sqlite:///{data_dir() / 'perdollar.sqlite'}"
