"""Moving the data to the machines and keeping the checkpoints: egress, copy time and storage.

A candidate in the data's own region pays nothing to read it. One elsewhere first copies the
dataset there: the source cloud bills the bytes out (its inter-region rate within the same cloud
and continent, its inter-continent rate across continents, its tiered internet rate to another
cloud) and the copy takes size / throughput before training can start. The copy is staged by the
storage service, so no instance-hours run during it: it lengthens the time, not the compute bill.

Sizes are decimal (1 TB = 1000 GB), as clouds bill them: 20 TB at $0.02/GB is $400.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from perdollar.catalog.bill_data import CloudDataRates, continent_of
from perdollar.frames import row_keys

GB = 1e9
HOURS_PER_MONTH = 730.0  # the hours clouds bill a storage month by
DEFAULT_CHECKPOINTS_KEPT = 2  # the latest and the one before it, in case the latest is torn


def tiered_cost(gigabytes: float, tiers: Sequence[tuple[float, float]]) -> float:
    """USD for ``gigabytes`` under tiers of (from GB, USD/GB): each GB at the rate of its tier."""
    total = 0.0
    for index, (start, rate) in enumerate(tiers):
        end = tiers[index + 1][0] if index + 1 < len(tiers) else np.inf
        if gigabytes <= start:
            break
        total += (min(gigabytes, end) - start) * rate
    return total


def egress_usd(
    size_bytes: float, source: CloudDataRates, source_region: str, cloud: str, region: str
) -> float:
    """What the data's cloud bills to copy ``size_bytes`` from ``source_region`` to (cloud, region)."""
    if size_bytes <= 0 or (cloud == source.cloud and region == source_region):
        return 0.0
    gigabytes = size_bytes / GB
    if cloud != source.cloud:
        return tiered_cost(gigabytes, source.internet_tiers)
    same_continent = continent_of(region) == continent_of(source_region)
    rate = source.inter_region_usd_per_gb if same_continent else source.inter_continent_usd_per_gb
    return gigabytes * rate


def transfer_hours(size_bytes: float, gbps: float) -> float:
    """Hours to copy ``size_bytes`` at ``gbps`` gigabits per second."""
    return size_bytes * 8.0 / (gbps * 1e9) / 3600.0 if size_bytes > 0 else 0.0


def storage_usd(size_bytes: np.ndarray, hours: np.ndarray, usd_per_gb_month: np.ndarray) -> np.ndarray:
    """Object storage for ``size_bytes`` held ``hours``, billed per GB-month."""
    with np.errstate(invalid="ignore"):
        return size_bytes / GB * usd_per_gb_month * hours / HOURS_PER_MONTH


def movement_columns(
    frame: pd.DataFrame,
    *,
    size_bytes: float,
    source: CloudDataRates | None,
    source_region: str | None,
    rates: dict[str, CloudDataRates],
    copy_gbps: float | None = None,
) -> pd.DataFrame:
    """``egress_usd`` and ``transfer_hours`` of every row (cloud, region); zero without a data region."""
    if source is None or source_region is None:
        zeros = np.zeros(len(frame))
        return pd.DataFrame({"egress_usd": zeros, "transfer_hours": zeros.copy()}, index=frame.index)
    pairs = frame[["cloud", "region"]].drop_duplicates()
    egress: dict[tuple[str, str], float] = {}
    hours: dict[tuple[str, str], float] = {}
    for cloud, region in pairs.itertuples(index=False):
        key = (str(cloud), str(region))
        if source is None or source_region is None:
            egress[key], hours[key] = 0.0, 0.0
            continue
        cost = egress_usd(size_bytes, source, source_region, *key)
        moved = key != (source.cloud, source_region)
        gbps = copy_gbps or min(source.copy_gbps, rates.get(key[0], source).copy_gbps)
        egress[key], hours[key] = cost, transfer_hours(size_bytes, gbps) if moved else 0.0
    keys = [(cloud, region) for cloud, region in row_keys(frame, ("cloud", "region"))]
    return pd.DataFrame(
        {"egress_usd": [egress[k] for k in keys], "transfer_hours": [hours[k] for k in keys]},
        index=frame.index,
    )
