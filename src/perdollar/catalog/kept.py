"""Loaded catalogs kept in the cache folder, so a new process skips parsing and checking them.

Reading a snapshot parses twenty thousand CSV rows, checks every price against its peers
(``price_outliers``) and joins the offers with their instance types into the frame pricing
starts from; that is most of a warm ``recommend``'s own work. The checked result is kept as one
pickle under ``catalog-kept/`` (:mod:`perdollar.cache`), named by a digest of everything that
shapes it: the snapshot folder and its files' bytes, the catalog package (code and data) and the
vocabulary it checks names against, perdollar's, pandas' and numpy's versions and Python's. A
changed file gives another name, so an earlier catalog is never served; a kept file that cannot be
read back whole is ignored and written again.

A kept file is data, never code: it is read only when this user owns it and nobody else may write
it, and only through an unpickler that builds the few classes a catalog is made of (perdollar's
catalog records, pandas frames, numpy arrays, dates) and refuses every other name, so a planted or
edited file cannot run anything; it is then read from the snapshot again.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import pickle
import stat
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import perdollar
from perdollar import cache
from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Offer
from perdollar.catalog.snapshot import read_snapshot

KIND = "catalog-kept"
_SCHEMA = 1
# Kept files of other snapshots or code versions (other checkouts may share the data directory).
_KEPT_AT_MOST = 4
_LEFT_AFTER_S = 3600.0
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
    "price_min_per_hour",
)


# The catalog package's code and data and the vocabulary it checks names against: a changed
# reader, outlier check or list of clouds reads the files again.
_CODE = ("catalog", "vocabulary.py")


def kept_name(folder: Path) -> str:
    """The kept file's name for the snapshot in ``folder``, as it is on disk now."""
    digest = hashlib.sha256()
    code = cache.code_digest(_CODE)
    parts = (_SCHEMA, perdollar.__version__, pd.__version__, np.__version__, sys.version, code)
    digest.update(repr(parts).encode())
    digest.update(str(folder.resolve()).encode())
    for path in sorted(folder.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return f"{digest.hexdigest()[:32]}.pickle"


def _to_document(catalog: Catalog, name: str) -> dict[str, object]:
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

    @property
    def offers(self) -> tuple[Offer, ...]:
        built = self.__dict__.get("_offers")
        if built is None:
            try:
                columns = safe_loads(self.__dict__.pop("_offer_columns"))
                if not isinstance(columns, list):
                    raise TypeError(f"kept offer columns are a {type(columns).__name__}, not a list")
                built = tuple(map(Offer, *columns))
            except Exception:  # damaged or refused columns: the snapshot's own offers
                assert self.path is not None, "a kept catalog is always built with its snapshot's folder"
                built = read_snapshot(self.path).offers
            self.__dict__["_offers"] = built
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


def _from_document(document: Mapping[str, Any], folder: Path) -> Catalog:
    # The values are what _to_document pickled, read back from the kept file as they are.
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


# Every name a kept catalog's pickle refers to (numpy and pandas name some twice across versions).
_ALLOWED: frozenset[tuple[str, str]] = frozenset(
    {
        ("builtins", "slice"),
        ("builtins", "set"),
        ("builtins", "frozenset"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("perdollar.catalog.model", "Accelerator"),
        ("perdollar.catalog.model", "InstanceType"),
        ("perdollar.catalog.model", "NameParts"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        *(
            (module, name)
            for module in ("numpy.core.multiarray", "numpy._core.multiarray")
            for name in ("_reconstruct", "scalar")
        ),
        *((module, "_frombuffer") for module in ("numpy.core.numeric", "numpy._core.numeric")),
        ("pandas", "DataFrame"),
        ("pandas", "Series"),
        ("pandas", "Index"),
        ("pandas", "RangeIndex"),
        ("pandas", "StringDtype"),
        ("pandas.arrays", "StringArray"),
        ("pandas.core.frame", "DataFrame"),
        ("pandas.core.series", "Series"),
        ("pandas.core.indexes.base", "Index"),
        ("pandas.core.indexes.base", "_new_Index"),
        ("pandas.core.indexes.range", "RangeIndex"),
        ("pandas.core.arrays.string_", "StringArray"),
        ("pandas.core.arrays.string_", "StringDtype"),
        ("pandas.core.internals.managers", "BlockManager"),
        ("pandas.core.internals.blocks", "new_block"),
        ("pandas._libs.internals", "_unpickle_block"),
        ("pandas._libs.internals", "BlockPlacement"),
        ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    }
)


class _CatalogUnpickler(pickle.Unpickler):
    """Builds only the classes a kept catalog is made of; any other name is refused."""

    def find_class(self, module: str, name: str) -> object:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"a kept catalog does not refer to {module}.{name}")
        return super().find_class(module, name)


def safe_loads(data: bytes) -> object:
    """``pickle.loads`` of a kept catalog's bytes, building nothing but a catalog's parts."""
    return _CatalogUnpickler(io.BytesIO(data)).load()


def _owned_by_this_user(path: Path) -> bool:
    """The file and its folder are this user's and nobody else may write them (a file another
    account could plant or edit is not read)."""
    getuid = getattr(os, "getuid", None)
    for checked in (path, path.parent):
        status = checked.stat()
        if getuid is not None and status.st_uid != getuid():
            return False
        if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (
            checked.is_dir() and status.st_mode & stat.S_ISVTX
        ):
            return False
    return stat.S_ISREG(path.lstat().st_mode)  # not a link to something else


def _read_kept(path: Path, folder: Path) -> Catalog | None:
    try:
        if not _owned_by_this_user(path):
            return None
        document = safe_loads(path.read_bytes())
        if not isinstance(document, dict) or document.get("name") != path.name:
            return None
        return _from_document(document, folder)
    except Exception:  # a damaged, foreign or refused file of our own cache: the snapshot is read again
        return None


def _keep(path: Path, catalog: Catalog) -> None:
    # Atomic (a concurrent reader sees the whole file or none); a read-only or full disk only
    # costs the next process the reading again.
    with contextlib.suppress(OSError):
        # Private: a folder others may write (a umask of 002, say) would never be read from.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
    # A process killed while writing leaves its temporary file; one an hour old is nobody's now.
    left = [p for p in folder.glob("*.tmp") if time.time() - p.stat().st_mtime > _LEFT_AFTER_S]
    for old in [*kept[_KEPT_AT_MOST:], *left]:
        with contextlib.suppress(OSError):
            old.unlink()


def kept_or_read(folder: Path, kept_folder: Path | None) -> Catalog:
    """The snapshot in ``folder``, from its kept copy in ``kept_folder`` when that is current,
    else read and checked (and kept there). ``kept_folder`` None keeps nothing."""
    if kept_folder is None or not folder.is_dir():
        return read_snapshot(folder)
    path = kept_folder / kept_name(folder)
    catalog = _read_kept(path, folder)
    if catalog is not None:
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: pruned last
        return catalog
    catalog = read_snapshot(folder)
    _keep(path, catalog)
    return catalog
