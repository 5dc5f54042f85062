"""The instance catalog: accelerators, instance types and priced offers across AWS, GCP and Azure,
and the GPU clouds a refresh brings in (Lambda, RunPod, Vast.ai, Nebius, OCI, …).

    >>> from perdollar import catalog
    >>> cat = catalog.load()
    >>> cat.instance("ml.g4dn.12xlarge").accelerator_count
    4.0
    >>> catalog.find(accelerator="a10g", cloud="aws").head()   # a pandas DataFrame

``load()`` returns the newest snapshot written by ``perdollar catalog refresh`` (in the user's
data directory) or, when there is none, the snapshot bundled with the package.
"""

from __future__ import annotations

from pathlib import Path

from perdollar import cache
from perdollar.catalog.catalog import Catalog
from perdollar.catalog.kept import KIND as KEPT_KIND
from perdollar.catalog.kept import kept_or_read
from perdollar.catalog.model import Accelerator, InstanceType, NameParts, Offer
from perdollar.catalog.query import find, listing_frame
from perdollar.paths import catalog_snapshot_dir

BUNDLED_SNAPSHOT = Path(__file__).parent / "data"

__all__ = [
    "BUNDLED_SNAPSHOT",
    "Accelerator",
    "Catalog",
    "InstanceType",
    "NameParts",
    "Offer",
    "find",
    "listing_frame",
    "load",
    "user_snapshots",
]

_cache: dict[tuple[str, float], Catalog] = {}


def user_snapshots() -> list[Path]:
    """Snapshot folders written by ``catalog refresh``, oldest first (names are UTC timestamps)."""
    try:
        root = catalog_snapshot_dir()
    except OSError:
        return []  # an unusable data folder holds no snapshots; the bundled one still works
    return sorted(
        p
        for p in root.iterdir()
        if p.is_dir()
        and not p.name.startswith(".")
        and (p / "manifest.json").exists()  # .partial: unfinished
    )


def load(path: str | Path | None = None) -> Catalog:
    """Load a catalog snapshot: ``path`` if given, else the newest user snapshot, else the bundled one.

    Loaded snapshots are cached per folder (and its manifest's modification time), and kept
    checked in the data directory for the next process (``catalog.kept``).
    """
    if path is not None:
        folder = Path(path)
    else:
        snapshots = user_snapshots()
        folder = snapshots[-1] if snapshots else BUNDLED_SNAPSHOT
    manifest = folder / "manifest.json"
    stamp = manifest.stat().st_mtime if manifest.exists() else 0.0
    key = (str(folder.resolve()), stamp)
    if key not in _cache:
        _cache[key] = kept_or_read(folder, _usable_cache_folder())
    return _cache[key]


def _usable_cache_folder() -> Path | None:
    try:
        return cache.cache_dir() / KEPT_KIND
    except OSError:
        return None  # nowhere to keep the checked catalog: it is read from its files each time
