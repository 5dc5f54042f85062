"""The results store: measurements, recommendations and catalog snapshots (SQLAlchemy).

SQLite in the user's data directory by default; any SQLAlchemy URL (PostgreSQL for a team)
through ``--store`` or ``PERDOLLAR_STORE``. The schema is migrated in place on open.
"""

from perdollar.store.history import HistoryEntry
from perdollar.store.store import CatalogSnapshot, Store, StoredRecommendation, open_store

__all__ = ["CatalogSnapshot", "HistoryEntry", "Store", "StoredRecommendation", "open_store"]
