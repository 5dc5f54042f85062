"""Writing snapshot folders (the bundled one at build time, refreshed ones at run time)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import InstanceType, Offer
from perdollar.catalog.snapshot import (
    ACCELERATORS,
    ALIAS_COLUMNS,
    ALIASES,
    INSTANCE_COLUMNS,
    INSTANCE_LATER_COLUMNS,
    INSTANCE_TYPES,
    MANIFEST,
    OFFER_COLUMNS,
    OFFER_LATER_COLUMNS,
    OFFERS,
    read_snapshot,
)
from perdollar.errors import PerdollarError


def write_snapshot(
    folder: Path,
    accelerators: pd.DataFrame,
    aliases: pd.DataFrame,
    instance_types: pd.DataFrame,
    offers: pd.DataFrame,
    manifest: Mapping[str, object],
) -> None:
    """Write pandas frames in the snapshot format (gzip without timestamps: reproducible bytes)."""
    folder.mkdir(parents=True, exist_ok=True)
    accelerators.to_csv(folder / ACCELERATORS, index=False)
    aliases.to_csv(folder / ALIASES, index=False)
    gz = {"method": "gzip", "mtime": 0, "compresslevel": 9}
    instance_types.to_csv(folder / INSTANCE_TYPES, index=False, compression=gz)
    offers.to_csv(folder / OFFERS, index=False, compression=gz)
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n")


def catalog_frames(
    catalog: Catalog,
    *,
    instance_types: dict[tuple[str, str], InstanceType] | None = None,
    offers: list[Offer] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A loaded catalog (optionally with replaced instance types/offers) as frames for writing."""
    chips = pd.DataFrame([dataclasses.asdict(c) for c in catalog.accelerators.values()])
    chips["sm_count"] = chips["sm_count"].astype("Int64")
    aliases = pd.DataFrame(
        [{"alias": a, "accelerator_key": k, "kind": ""} for a, k in catalog.aliases.items()],
        columns=list(ALIAS_COLUMNS),
    )
    types = pd.DataFrame(
        [
            {column: getattr(it, column) for column in (*INSTANCE_COLUMNS, *INSTANCE_LATER_COLUMNS)}
            for it in (instance_types if instance_types is not None else catalog.instance_types).values()
        ]
    ).sort_values(["cloud", "name"])
    offer_rows = [
        {
            "cloud": o.cloud,
            "instance_type": o.instance_type,
            "region": o.region,
            "market": o.market,
            "price_per_hour": o.price_per_hour,
            "price_max_per_hour": o.price_max_per_hour,
            "captured_at": o.captured_at.isoformat(),
            "price_basis": o.price_basis,
            "interruption_bucket": o.interruption_bucket or "",
            "flags": ";".join(o.flags),
            "price_min_per_hour": o.price_min_per_hour,
        }
        for o in (offers if offers is not None else catalog.offers)
    ]
    offer_columns = [*OFFER_COLUMNS, *OFFER_LATER_COLUMNS]
    return chips, aliases, types, pd.DataFrame(offer_rows, columns=offer_columns)


def check_loads(partial: Path) -> None:
    """Load a snapshot written aside before it takes over: one that would not load is removed, never
    renamed into place (it would break every later command until deleted by hand)."""
    try:
        read_snapshot(partial)
    except PerdollarError as error:
        shutil.rmtree(partial, ignore_errors=True)
        raise PerdollarError(
            f"the new catalog snapshot would not load ({error.problem.replace(str(partial), '…')})",
            "nothing was written; the current catalog is unchanged — fix or leave out the source that "
            "brought this value",
        ) from None


def write_new_snapshot(
    base: Catalog,
    instance_types: dict[tuple[str, str], InstanceType],
    offers: list[Offer],
    manifest: Mapping[str, object],
    out_root: Path,
    name: str,
) -> Path:
    """Write a refreshed snapshot as ``out_root/name``: aside first, then renamed, so that a failure
    leaves no half-written folder to be taken for the newest snapshot and the previous one intact.

    Refreshes that start in the same second share a name: each writes aside in a folder of its own
    and takes the first free name of ``name``, ``name-2``, ``name-3``… (sorted after ``name``, so
    the last one written is still the newest)."""
    frames = catalog_frames(base, instance_types=instance_types, offers=offers)
    partial: Path | None = None
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=out_root))
        write_snapshot(partial, *frames, manifest)
        check_loads(partial)
        final = _publish(partial, out_root, name)
    except OSError as error:
        if partial is not None:
            shutil.rmtree(partial, ignore_errors=True)
        raise PerdollarError(
            f"cannot write the new catalog snapshot in {out_root} ({error.strerror or error})",
            "make that folder writable, or set PERDOLLAR_HOME to a writable folder",
        ) from None
    return final


def _publish(partial: Path, out_root: Path, name: str) -> Path:
    """Rename ``partial`` to the first name no other snapshot has taken (renaming onto an existing
    folder fails rather than replaces, so two processes never take the same one)."""
    for number in range(1, 1000):
        final = out_root / (name if number == 1 else f"{name}-{number}")
        try:
            partial.rename(final)
            return final
        except OSError:
            if not final.exists():
                raise
    raise FileExistsError(f"{name} and 999 more snapshots of that name already exist")
