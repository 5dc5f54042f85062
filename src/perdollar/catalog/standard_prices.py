"""Which of a machine's regional prices are its standard rate, where the source says it may have
matched another SKU.

For GCP's A100, H100 and H200 machines the source's GPU price differs more than twice across
regions (the manifest's ``gcp-gpu-sku-price-inconsistent-across-regions``): in part of the
regions it matched a discounted SKU (Flex-start / DWS), so a3-highgpu-8g on demand reads $43/h in
six regions and $88–112/h in the ten others, and the published us-central1 list price is about
$88. Standard GCP prices of one machine differ by region far less than that gap, so the prices
of a flagged machine and market fall into two groups; the lower group is marked
:data:`NONSTANDARD_SKU_FLAG` and is not ranked.
"""

from __future__ import annotations

import csv
import dataclasses
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import numpy as np

from perdollar.catalog.model import Offer
from perdollar.catalog.purchase import NONSTANDARD_SKU_FLAG

INCONSISTENT_FLAG = "gcp-gpu-sku-price-inconsistent-across-regions"
# The smallest step between consecutive sorted prices read as two SKUs. GCP's standard GPU
# machine prices of one type span at most about 1.25× between neighbouring regions
# (g2-standard-4: $0.70–0.91 outside the Middle East); the steps between SKUs here are 1.38–2.5×.
SKU_GAP = 1.3


def _below_the_gap(prices: list[float]) -> float | None:
    """The highest price of the lower group, or None when the prices form one group."""
    ordered = np.sort(np.asarray([p for p in prices if p > 0], dtype=np.float64))
    if len(ordered) < 2:
        return None
    steps = ordered[1:] / ordered[:-1]
    widest = int(np.argmax(steps))
    return float(ordered[widest]) if steps[widest] >= SKU_GAP else None


def with_standard_price_flags(offers: Iterable[Offer]) -> list[Offer]:
    """``offers`` with :data:`NONSTANDARD_SKU_FLAG` on the flagged machines' lower price group
    (recomputed on every load, as the outlier flag is)."""
    listed = [
        dataclasses.replace(o, flags=tuple(f for f in o.flags if f != NONSTANDARD_SKU_FLAG))
        if NONSTANDARD_SKU_FLAG in o.flags
        else o
        for o in offers
    ]
    groups: dict[tuple[str, str, str], list[float]] = {}
    for offer in listed:
        if INCONSISTENT_FLAG in offer.flags:
            key = (offer.cloud, offer.instance_type, offer.market)
            groups.setdefault(key, []).append(offer.price_per_hour)
    ceilings = {key: _below_the_gap(prices) for key, prices in groups.items()}
    out = []
    for offer in listed:
        ceiling = ceilings.get((offer.cloud, offer.instance_type, offer.market))
        if ceiling is not None and 0 < offer.price_per_hour <= ceiling:
            offer = dataclasses.replace(offer, flags=(*offer.flags, NONSTANDARD_SKU_FLAG))
        out.append(offer)
    return out


LIST_PRICES_FILE = Path(__file__).with_name("gcp_list_prices.csv")


@cache
def gcp_list_prices() -> dict[tuple[str, str], float]:
    """GCP's published on-demand list prices of a few machines, (machine, region) → USD per hour, to
    check the catalog's prices against (``gcp_list_prices.csv``: each row's page and date)."""
    with LIST_PRICES_FILE.open(newline="") as handle:
        return {
            (row["instance_type"], row["region"]): float(row["usd_per_hour"])
            for row in csv.DictReader(handle)
        }
