"""The per-GPU price view: for each accelerator, its cheapest GPU-hour on demand and on spot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from perdollar.catalog.catalog import check_cloud

if TYPE_CHECKING:
    from perdollar.catalog.catalog import Catalog

GPU_PRICE_COLUMNS = (
    "accelerator_key", "vendor", "memory_gib",
    "on_demand_per_gpu_hour", "on_demand_cloud", "on_demand_region", "on_demand_instance_type",
    "on_demand_captured_at",
    "spot_per_gpu_hour", "spot_cloud", "spot_region", "spot_instance_type", "spot_captured_at",
    "offers",
)  # fmt: skip


def _cheapest(rows: pd.DataFrame, market: str) -> dict[str, object]:
    prefix = "on_demand" if market == "on-demand" else "spot"
    chosen = rows[rows["market"] == market]
    if chosen.empty:
        return {f"{prefix}_{k}": None for k in ("cloud", "region", "instance_type", "captured_at")} | {
            f"{prefix}_per_gpu_hour": math.nan
        }
    best = chosen.sort_values(["per_gpu_hour", "cloud", "instance_type", "region"], kind="stable").iloc[0]
    return {
        f"{prefix}_per_gpu_hour": float(best["per_gpu_hour"]),
        f"{prefix}_cloud": best["cloud"],
        f"{prefix}_region": best["region"],
        f"{prefix}_instance_type": best["instance_type"],
        f"{prefix}_captured_at": best["captured_at"].isoformat(),
    }


def gpu_prices(
    catalog: Catalog,
    *,
    cloud: list[str] | None = None,
    region: list[str] | None = None,
    accelerator: str | None = None,
    min_memory_gib: float | None = None,
) -> pd.DataFrame:
    """One row per accelerator: cheapest USD per GPU-hour on demand and on spot, where, and when.

    A machine's price is divided by its accelerator count (a 1/8 slice costs 8× its price per
    whole GPU); machines excluded for training (virtual-desktop slices) are left out.
    """
    offers = catalog.offers_frame()
    offers = offers[offers["accelerator_key"].notna() & (offers["accelerator_count"] > 0)]
    excluded = {key for key, it in catalog.instance_types.items() if it.excluded_reason}
    if excluded:
        keys = list(zip(offers["cloud"], offers["instance_type"], strict=True))
        offers = offers[[k not in excluded for k in keys]]
    if cloud:
        offers = offers[offers["cloud"].isin({check_cloud(c, catalog.clouds) for c in cloud})]
    if region:
        offers = offers[offers["region"].isin(region)]
    if accelerator:
        offers = offers[offers["accelerator_key"].isin(catalog.accelerator_keys_matching(accelerator))]
    offers = offers.assign(per_gpu_hour=offers["price_per_hour"] / offers["accelerator_count"].astype(float))
    rows = []
    for key, group in offers.groupby("accelerator_key", sort=True):
        chip = catalog.accelerators[str(key)]
        if min_memory_gib is not None and chip.memory_gib < min_memory_gib:
            continue
        rows.append(
            {"accelerator_key": key, "vendor": chip.vendor, "memory_gib": chip.memory_gib}
            | _cheapest(group, "on-demand")
            | _cheapest(group, "spot")
            | {"offers": len(group)}
        )
    frame = pd.DataFrame(rows, columns=list(GPU_PRICE_COLUMNS))
    frame["cheapest"] = frame[["on_demand_per_gpu_hour", "spot_per_gpu_hour"]].min(axis=1)
    frame = frame.sort_values(["cheapest", "accelerator_key"], na_position="last", kind="stable")
    return frame.drop(columns=["cheapest"]).reset_index(drop=True)
