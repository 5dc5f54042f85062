"""How each machine can be bought: the markets a cloud does not sell it in, and prices that are
not the machine's standard rate.

A price a source lists is not always a price anyone can pay. GCP sells a3-highgpu-1g only as Spot
or Flex-start VMs and A3 Ultra / A4 through reservations, yet the billing catalogue carries an
on-demand figure for them; and for some GPU SKUs the source matched a discounted one in part of
the regions. ``capacity_constraints.csv`` records, per machine pattern and with its source and
date, the markets it is not sold in; :func:`unranked_reasons` says, per offer, why a market may
not rank it (empty where it may).
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

CAPACITY_FILE = Path(__file__).with_name("capacity_constraints.csv")

# A price whose parts are not the machine's standard rate (see ``standard_prices``): never ranked.
NONSTANDARD_SKU_FLAG = "gcp-nonstandard-sku-price"
HOST_PRICE_MISSING_FLAG = "gcp-host-vm-price-missing"
UNRANKED_PRICE_FLAGS = {
    NONSTANDARD_SKU_FLAG: (
        "its price is not the machine's standard rate (the source matched a discounted GPU SKU)"
    ),
    HOST_PRICE_MISSING_FLAG: "its price covers the GPUs only (the host VM's price is missing in the source)",
}


@dataclass(frozen=True, slots=True)
class CapacityConstraint:
    cloud: str
    instance_pattern: str
    flag: str
    meaning: str
    not_sold_in: tuple[str, ...]  # markets the cloud does not sell the machine in
    source: str
    as_of: dt.date


@cache
def capacity_constraints(path: Path = CAPACITY_FILE) -> tuple[CapacityConstraint, ...]:
    with path.open(newline="") as handle:
        return tuple(
            CapacityConstraint(
                cloud=row["cloud"],
                instance_pattern=row["instance_pattern"].lower(),
                flag=row["flag"],
                meaning=row["meaning"],
                not_sold_in=tuple(m for m in row["not_sold_in"].split(";") if m),
                source=row["source"],
                as_of=dt.date.fromisoformat(row["as_of"]),
            )
            for row in csv.DictReader(handle)
        )


@cache  # of the bundled constraints: asked for every machine of a catalog-wide question
def _constraints_of(cloud: str, instance_type: str) -> tuple[CapacityConstraint, ...]:
    return tuple(
        c
        for c in capacity_constraints()
        if c.cloud == cloud.lower() and fnmatch.fnmatch(instance_type.lower(), c.instance_pattern)
    )


def capacity_flags(cloud: str, instance_type: str) -> tuple[str, ...]:
    """The known capacity constraints of a machine (offered only as blocks or reservations)."""
    return tuple(c.flag for c in _constraints_of(cloud, instance_type))


def not_sold_reason(cloud: str, instance_type: str, market: str) -> str:
    """Why ``market`` cannot buy the machine (the constraint's meaning and source), or ""."""
    for c in _constraints_of(cloud, instance_type):
        if market in c.not_sold_in:
            return f"{c.meaning} (as of {c.as_of}; its source: `perdollar catalog terms`)"
    return ""


def with_capacity_flags(offers: pd.DataFrame) -> pd.DataFrame:
    """``offers`` with each known capacity constraint added to its row's flags."""
    machines = offers[["cloud", "instance_type"]].drop_duplicates().itertuples(index=False)
    pairs = {(c, i): capacity_flags(str(c), str(i)) for c, i in machines}
    if not any(pairs.values()):
        return offers
    out = offers.copy()
    columns = (out[c].to_numpy(dtype=object) for c in ("flags", "cloud", "instance_type"))
    out["flags"] = [
        (*(f if isinstance(f, tuple | list) else ()), *pairs[(c, i)])
        for f, c, i in zip(*columns, strict=True)
    ]
    return out


def unranked_reasons(offers: pd.DataFrame) -> np.ndarray:
    """Per offer: why no market may rank it — not sold in its market, or a price that is not the
    machine's standard rate — or "" where it may be ranked."""
    # Plain arrays, not the columns: a categorical column iterated a value at a time is slow.
    columns = [offers[c].to_numpy(dtype=object) for c in ("cloud", "instance_type", "market")]
    keys = list(zip(*columns, strict=True))
    unsold = {key: not_sold_reason(*(str(part) for part in key)) for key in dict.fromkeys(keys)}
    reasons = np.array([unsold[key] for key in keys], dtype=object)
    flags = offers["flags"].to_numpy(dtype=object)
    for flag, reason in UNRANKED_PRICE_FLAGS.items():
        flagged = np.fromiter(
            (flag in (f if isinstance(f, tuple | list) else ()) for f in flags), bool, len(flags)
        )
        reasons[flagged & (reasons == "")] = reason
    return reasons
