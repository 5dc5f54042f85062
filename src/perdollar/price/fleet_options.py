"""Fleet candidates: each class's replica capacity joined to the offers that can run it."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from perdollar.catalog import bill_data
from perdollar.price.energy import grid_columns
from perdollar.price.fleet import FleetOption

# kW one instance of a class frame's deployment draws from the grid (with its host and PUE).
POWER = "kw_per_instance"
# The rows of one deployment shape in the per-class frames.
SHAPE = [
    "cloud",
    "instance_type",
    "accelerator_key",
    "tensor_parallel",
    "precision",
    "engine",
    "kv_precision",
]


def class_capacities(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """One row per deployment shape with ``capacity_<c>``: requests/s a replica takes for class c.

    ``frames`` are :func:`perdollar.predict.llm_serving.frame.llm_serving_frame` of each class;
    a shape no class can run is dropped. Frames that carry :data:`POWER` give ``kw_per_instance_<c>``.
    """
    merged: pd.DataFrame | None = None
    for index, frame in enumerate(frames):
        columns = [*SHAPE, "replicas_per_instance", "feasible", "slo_rate_per_replica"]
        part = frame[columns + [POWER] * (POWER in frame)].copy()
        if POWER in part:  # each class's power, apart
            part = part.rename(columns={POWER: f"{POWER}_{index}"})
        part[f"capacity_{index}"] = part["slo_rate_per_replica"].where(part["feasible"], 0.0).fillna(0.0)
        part = part.drop(columns=["feasible", "slo_rate_per_replica"])
        merged = part if merged is None else merged.merge(part, on=[*SHAPE, "replicas_per_instance"])
    assert merged is not None
    capacity = merged[[f"capacity_{i}" for i in range(len(frames))]]
    return merged[(capacity > 0).any(axis=1)].reset_index(drop=True)


def fleet_options(
    capacities: pd.DataFrame, offers: pd.DataFrame, classes: int,
    scale_up_s: Callable[[pd.Series], float],
) -> list[FleetOption]:  # fmt: skip
    """A candidate per (shape, market) in its cheapest region, with the on-demand fallback price.

    ``offers``: priced rows of :meth:`Catalog.offers_frame`; ``scale_up_s`` gives a joined row's
    instance start plus model load. Where ``capacities`` has the kW an instance draws
    (:data:`POWER`), an hour's emissions are that times the grid intensity of the offer's region.
    """
    columns = ["cloud", "instance_type", "region", "market", "price_per_hour", "interruption_bucket"]
    columns += [c for c in ("network_gbps", "accelerator_count", "captured_at") if c in offers.columns]
    priced = offers[columns].dropna(subset=["price_per_hour"])
    on_demand = priced[priced["market"] == "on-demand"]
    fallback_by_region = on_demand.groupby(["cloud", "instance_type", "region"])["price_per_hour"].min()
    fallback_anywhere = on_demand.groupby(["cloud", "instance_type"])["price_per_hour"].min()
    joined = capacities.merge(priced, on=["cloud", "instance_type"], how="inner")
    joined = joined.sort_values("price_per_hour", kind="stable").drop_duplicates([*SHAPE, "market"])
    grid = grid_columns(joined, bill_data.grid_carbon())["grid_gco2e_per_kwh"].to_numpy(dtype=float)
    kw = joined[POWER].to_numpy(dtype=float) if POWER in joined else np.full(len(joined), np.nan)
    joined = joined.assign(co2e_g_per_hour=kw * grid)
    options = []
    for _, row in joined.iterrows():
        key = (row["cloud"], row["instance_type"])
        fallback = fallback_by_region.get((*key, row["region"]), fallback_anywhere.get(key, math.nan))
        options.append(FleetOption(
            label=(f"{row['instance_type']} {row['market']} ({row['cloud']} {row['region']}) "
                   f"tp{int(row['tensor_parallel'])}+{row['precision']}"),
            instance_type=str(row["instance_type"]),
            market=str(row["market"]),
            price_per_hour=float(row["price_per_hour"]),
            replicas_per_instance=int(row["replicas_per_instance"]),
            class_capacity=tuple(float(row[f"capacity_{c}"]) for c in range(classes)),
            scale_up_s=scale_up_s(row),
            interruption_bucket=str(row["interruption_bucket"] or ""),
            fallback_price_per_hour=float(fallback),
            accelerator_key=str(row["accelerator_key"]),
            tensor_parallel=int(row["tensor_parallel"]),
            precision=str(row["precision"]),
            engine=str(row["engine"]),
            kv_precision=str(row["kv_precision"]),
            cloud=str(row["cloud"]),
            region=str(row["region"]),
            gpus_per_instance=_count(row.get("accelerator_count")),
            co2e_g_per_hour=float(row["co2e_g_per_hour"]),
            captured_at=str(row.get("captured_at") or "")[:10],
        ))  # fmt: skip
    return options


def _count(value: object) -> int:
    number = pd.to_numeric(value, errors="coerce")
    return int(number) if pd.notna(number) else 0
