"""Loaded catalogs kept in the data directory, so a new process skips parsing and checking them.

Reading a snapshot parses twenty thousand CSV rows, checks every price against its peers
(``price_outliers``) and joins the offers with their instance types into the frame pricing
starts from; that is most of a warm ``recommend``'s own work. The checked result is kept as one
pickle under ``catalog-kept/``, named by a digest of everything that shapes it: the snapshot
folder and its files' bytes, the catalog-reading code, perdollar's, pandas' and numpy's versions
and Python's. A changed file gives another name, so an earlier catalog is never served; a kept
file that cannot be read back whole is ignored and written again.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import perdollar
from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Offer
from perdollar.catalog.snapshot import read_snapshot

KEPT_FOLDER = "catalog-kept"
_SCHEMA = 1
# Kept files of other snapshots or code versions (other checkouts may share the data directory).
_KEPT_AT_MOST = 4
# The catalog's lazily built frames that pricing reads first; kept so that they are not rebuilt.
_KEPT_FRAMES = ("_instances_frame", "_offers_frame")
_OFFER_FIELDS = (
    "cloud",
    "instance_type",
    "region",
    "market",
    "price_per_hour",
    "captured_at",
    "price_max_per_hour",
    "price_basis",
    "interruption_bucket",
    "flags",
)


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The catalog package's source and the vocabulary it checks names against: a changed reader,
    outlier check or list of clouds reads the files again."""
    digest = hashlib.sha256()
    package = Path(__file__).parent
    for path in [*sorted(package.glob("*.py")), package.parent / "vocabulary.py"]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def kept_name(folder: Path) -> str:
    """The kept file's name for the snapshot in ``folder``, as it is on disk now."""
    digest = hashlib.sha256()
    parts = (_SCHEMA, perdollar.__version__, pd.__version__, np.__version__, sys.version, _code_digest())
    digest.update(repr(parts).encode())
    digest.update(str(folder.resolve()).encode())
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return f"{digest.hexdigest()[:32]}.pickle"


def _to_document(catalog: Catalog, name: str) -> dict[str, Any]:
    offers = catalog.offers
    return {
        "name": name,
        "accelerators": dict(catalog.accelerators),
        "instance_types": dict(catalog.instance_types),
        # Columns, not Offer objects, pickled apart: read only when something asks for the offers
        # (pricing starts from the kept frame), and then three times faster to rebuild than
        # twenty thousand frozen, slotted dataclasses unpickled one by one.
        "offers": pickle.dumps(
            [[getattr(o, f) for o in offers] for f in _OFFER_FIELDS], protocol=pickle.HIGHEST_PROTOCOL
        ),
        "captured_at": catalog.captured_at,
        "snapshot_id": catalog.snapshot_id,
        "aliases": dict(catalog.aliases),
        "manifest": dict(catalog.manifest),
        "frames": {frame: getattr(catalog, frame) for frame in _KEPT_FRAMES},
    }


class _KeptCatalog(Catalog):
    """A kept catalog, whose Offer objects are built the first time something reads them."""

    @property  # type: ignore[override]
    def offers(self) -> tuple[Offer, ...]:
        built = self.__dict__.get("_offers")
        if built is None:
            columns = pickle.loads(self.__dict__.pop("_offer_columns"))
            built = self.__dict__["_offers"] = tuple(map(Offer, *columns))
        return built

    @offers.setter
    def offers(self, value: tuple[Offer, ...] | _OfferColumns) -> None:
        # The dataclass' __init__ sets the field through here (as does dataclasses.replace).
        if isinstance(value, _OfferColumns):
            self.__dict__["_offer_columns"] = value.pickled
        else:
            self.__dict__["_offers"] = tuple(value)


@dataclass(frozen=True)
class _OfferColumns:
    pickled: bytes


def _from_document(document: dict[str, Any], folder: Path) -> Catalog:
    catalog = _KeptCatalog(
        accelerators=document["accelerators"],
        instance_types=document["instance_types"],
        offers=_OfferColumns(document["offers"]),  # type: ignore[arg-type]
        captured_at=document["captured_at"],
        snapshot_id=document["snapshot_id"],
        aliases=document["aliases"],
        manifest=document["manifest"],
        path=folder,
    )
    for frame, value in document["frames"].items():
        catalog.__dict__[frame] = value  # what the cached property would have built
    return catalog


def _read_kept(path: Path, folder: Path) -> Catalog | None:
    try:
        with path.open("rb") as kept:
            document = pickle.load(kept)
        if not isinstance(document, dict) or document.get("name") != path.name:
            return None
        return _from_document(document, folder)
    except Exception:  # a damaged or foreign file of our own cache: the snapshot is read again
        return None


def _keep(path: Path, catalog: Catalog) -> None:
    # Atomic (a concurrent reader sees the whole file or none); a read-only or full disk only
    # costs the next process the reading again.
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as out:
                pickle.dump(_to_document(catalog, path.name), out, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
        _prune(path.parent)


def _prune(folder: Path) -> None:
    kept = sorted(folder.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in kept[_KEPT_AT_MOST:]:
        with contextlib.suppress(OSError):
            old.unlink()


def kept_or_read(folder: Path, data_folder: Path | None) -> Catalog:
    """The snapshot in ``folder``, from its kept copy under ``data_folder`` when that is current,
    else read and checked (and kept). ``data_folder`` None keeps nothing."""
    if data_folder is None or not folder.is_dir():
        return read_snapshot(folder)
    path = data_folder / KEPT_FOLDER / kept_name(folder)
    catalog = _read_kept(path, folder)
    if catalog is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return catalog
    catalog = read_snapshot(folder)
    _keep(path, catalog)
    return catalog
