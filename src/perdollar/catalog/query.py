"""Filters over the catalog that return pandas DataFrames (for the CLI and for notebooks)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from perdollar.catalog.catalog import HARDWARE_COLUMNS, check_cloud, none_for_missing
from perdollar.errors import PerdollarError

if TYPE_CHECKING:
    from perdollar.catalog.catalog import Catalog

LISTING_COLUMNS = (
    "cloud",
    "instance_type",
    "region",
    "vcpus",
    "memory_gib",
    "arch",
    "accelerator",
    "accelerator_key",
    "accelerator_count",
    "accelerator_memory_gib",
    "accelerator_memory_gib_total",
    "network_gbps",
    "efa_interfaces",
    "price_per_hour",
    "spot_price_per_hour",
    "spot_price_min_per_hour",
    "spot_price_max_per_hour",
    "spot_interruption",
    "spot_price_basis",
    "captured_at",
    "spot_captured_at",
    "flags",
)

SORT_KEYS = {
    "price": "price_per_hour",
    "spot": "spot_price_per_hour",
    "price-per-accelerator": "price_per_accelerator_hour",
    "accelerator-memory": "accelerator_memory_gib",
    "vcpus": "vcpus",
    "memory": "memory_gib",
    "accelerators": "accelerator_count",
    "network": "network_gbps",
    "name": "instance_type",
}
DESCENDING = {"accelerator_memory_gib", "vcpus", "memory_gib", "accelerator_count", "network_gbps"}


def listing_frame(catalog: Catalog | None = None) -> pd.DataFrame:
    """One row per (cloud, instance type, region): hardware, on-demand and spot price side by side."""
    if catalog is None:
        from perdollar.catalog import load

        catalog = load()
    offers = catalog.offers_frame()
    keys = ["cloud", "instance_type", "region"]
    on_demand = offers[offers["market"] == "on-demand"]
    spot = offers[offers["market"] == "spot"][
        [
            *keys,
            "price_per_hour",
            "price_min_per_hour",
            "price_max_per_hour",
            "interruption_bucket",
            "price_basis",
            "captured_at",
            "flags",
        ]
    ].rename(
        columns={
            "price_per_hour": "spot_price_per_hour",
            "price_min_per_hour": "spot_price_min_per_hour",
            "price_max_per_hour": "spot_price_max_per_hour",
            "interruption_bucket": "spot_interruption",
            "price_basis": "spot_price_basis",
            "captured_at": "spot_captured_at",
            "flags": "spot_flags",
        }
    )
    frame = on_demand.merge(spot, on=keys, how="outer", validate="one_to_one")
    # A spot-only row (no on-demand price in the source) still lists its hardware.
    instances = catalog.instances_frame().set_index(["cloud", "instance_type"])
    missing = frame["vcpus"].isna() & frame["price_per_hour"].isna()
    if missing.any():
        for column in HARDWARE_COLUMNS:
            frame.loc[missing, column] = [
                instances.at[(c, n), column]
                for c, n in zip(frame.loc[missing, "cloud"], frame.loc[missing, "instance_type"], strict=True)
            ]
    frame["flags"] = [
        tuple(dict.fromkeys((a if isinstance(a, tuple) else ()) + (b if isinstance(b, tuple) else ())))
        for a, b in zip(frame["flags"], frame["spot_flags"], strict=True)
    ]
    count = frame["accelerator_count"].astype(float)
    frame["accelerator"] = frame["accelerator_name"]
    frame["accelerator_memory_gib"] = [
        total / n if n else math.nan
        for total, n in zip(frame["accelerator_memory_gib_total"], count, strict=True)
    ]
    frame["price_per_accelerator_hour"] = [
        p / n if n else math.nan for p, n in zip(frame["price_per_hour"], count, strict=True)
    ]
    excluded = {key: it.excluded_reason for key, it in catalog.instance_types.items() if it.excluded_reason}
    frame["excluded_reason"] = [
        excluded.get((c, n), "") for c, n in zip(frame["cloud"], frame["instance_type"], strict=True)
    ]
    frame = frame[[*LISTING_COLUMNS, "price_per_accelerator_hour", "excluded_reason"]].reset_index(drop=True)
    return none_for_missing(
        frame, ("accelerator", "accelerator_key", "spot_interruption", "spot_price_basis")
    )


def find(
    catalog: Catalog | None = None,
    *,
    cloud: str | list[str] | None = None,
    region: str | list[str] | None = None,
    accelerator: str | None = None,
    min_accelerator_memory_gib: float | None = None,
    min_accelerators: float | None = None,
    min_vcpus: float | None = None,
    market: str | None = None,
    max_price: float | None = None,
    cpu_only: bool = False,
    sort: str = "price",
) -> pd.DataFrame:
    """Filter the listing; ``max_price`` applies to ``market`` (on-demand unless ``market="spot"``).

    Unknown clouds, regions and accelerators raise :class:`PerdollarError` with a suggestion.
    """
    if catalog is None:
        from perdollar.catalog import load

        catalog = load()
    frame = listing_frame(catalog)
    clouds = [cloud] if isinstance(cloud, str) else list(cloud or [])
    if clouds:
        wanted = {check_cloud(c, catalog.clouds) for c in clouds}
        frame = frame[frame["cloud"].isin(wanted)]
    regions = [region] if isinstance(region, str) else list(region or [])
    if regions:
        known = set(frame["region"])
        for name in regions:
            if name not in known:
                from perdollar.catalog.names import suggestion_text

                raise PerdollarError(
                    f"unknown region {name!r}" + (f" on {', '.join(clouds)}" if clouds else ""),
                    suggestion_text(name, known)
                    or "regions use each cloud's own names: us-east-1, us-central1, eastus",
                )
        frame = frame[frame["region"].isin(regions)]
    if accelerator:
        keys = catalog.accelerator_keys_matching(accelerator)
        frame = frame[frame["accelerator_key"].isin(keys)]
    if cpu_only:
        frame = frame[frame["accelerator_count"] == 0]
    if min_accelerator_memory_gib is not None:
        frame = frame[frame["accelerator_memory_gib"] >= min_accelerator_memory_gib]
    if min_accelerators is not None:
        frame = frame[frame["accelerator_count"] >= min_accelerators]
    if min_vcpus is not None:
        frame = frame[frame["vcpus"] >= min_vcpus]
    price_column = "price_per_hour"
    if market is not None:
        if market not in ("on-demand", "spot"):
            raise PerdollarError(f"unknown market {market!r}", "use on-demand or spot")
        price_column = "spot_price_per_hour" if market == "spot" else "price_per_hour"
        frame = frame[frame[price_column].notna()]
    if max_price is not None:
        if max_price < 0:
            raise PerdollarError(f"--max-price {max_price:g} is negative", "give a price in USD per hour ≥ 0")
        frame = frame[frame[price_column] <= max_price]
    if sort not in SORT_KEYS:
        raise PerdollarError(f"unknown sort key {sort!r}", f"use one of {', '.join(SORT_KEYS)}")
    column = SORT_KEYS[sort]
    if sort == "price" and market == "spot":
        column = "spot_price_per_hour"
    frame = frame.sort_values(
        [column, "cloud", "instance_type", "region"],
        ascending=[column not in DESCENDING, True, True, True],
        na_position="last",
        kind="stable",
    )
    return frame.reset_index(drop=True)
