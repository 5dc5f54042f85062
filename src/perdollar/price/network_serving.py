"""Priced deployments: replicas packed onto offers, spot spares for reclaim waves, $ per million requests."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

from perdollar.catalog.price_outliers import IMPLAUSIBLE_PRICE_FLAGS
from perdollar.frames import map_distinct
from perdollar.predict.network_serving.plans import CPU_KEY, AcceleratorPlan, ServingTarget
from perdollar.price.spot import bucket_fractions
from perdollar.vocabulary import SECONDS_PER_HOUR

Cell = TypeVar("Cell")  # one column's value, a plan's or the missing one


def price_deployments(
    plans: Mapping[tuple[str, float], AcceleratorPlan],
    offers: pd.DataFrame,
    target: ServingTarget,
    cpu_cores_per_replica: float | None = None,
) -> pd.DataFrame:
    """One row per offer: replicas, instances, $/h and $ per million requests, or why excluded.

    ``offers`` is :meth:`Catalog.offers_frame`, already filtered to the allowed clouds, regions
    and markets. CPU-only offers use the ``CPU`` plan with one replica per
    ``cpu_cores_per_replica`` vCPUs. Ranked cheapest first, excluded rows last.
    """
    frame = offers.copy()
    count = frame["accelerator_count"].fillna(0).astype(float)
    cpu_only = (count <= 0).to_numpy()
    fraction = np.where(cpu_only, 1.0, np.where(count < 1, count, 1.0))
    frame["device_fraction"] = fraction
    cpu_replicas = (
        np.floor(frame["vcpus"].fillna(0).to_numpy(dtype=float) / cpu_cores_per_replica)
        if cpu_cores_per_replica
        else np.ones(len(frame))
    )
    frame["replicas_per_instance"] = np.where(
        cpu_only, cpu_replicas, np.where(count >= 1, np.floor(count), 1.0)
    )
    accelerator = np.array(frame["accelerator_key"].fillna("").tolist(), dtype=object)
    accelerator[cpu_only] = CPU_KEY
    keys = list(zip(accelerator, fraction, strict=True))
    plan_rows = [plans.get(key) for key in keys]

    def column(getter: Callable[[AcceleratorPlan], Cell], missing: Cell) -> list[Cell]:
        return [getter(plan) if plan is not None else missing for plan in plan_rows]

    quantile = max(target.slo_ms)
    frame["replicas"] = column(lambda p: p.replicas, 0)
    frame["batch"] = column(lambda p: p.batch, 0)
    frame["max_wait_ms"] = column(lambda p: p.max_wait_ms, math.nan)
    frame["latency_ms"] = column(lambda p: p.latency_ms.get(quantile, math.nan), math.nan)
    frame["latency_high_ms"] = column(lambda p: p.latency_high_ms.get(quantile, math.nan), math.nan)
    frame["capacity_per_replica"] = column(lambda p: p.capacity_per_replica, math.nan)
    frame["rate_per_replica"] = column(lambda p: p.rate_per_replica, math.nan)
    frame["utilisation"] = column(lambda p: p.utilisation, math.nan)
    frame["basis"] = column(lambda p: p.basis, "spec")
    frame["bottleneck"] = column(lambda p: p.bottleneck, "")
    frame["excluded_reason"] = column(lambda p: p.excluded_reason, "")
    no_plan = np.array([plan is None for plan in plan_rows])
    reasons = np.array(frame["excluded_reason"].tolist(), dtype=object)
    reasons[no_plan & cpu_only] = (
        "CPU-only: no CPU latency curve yet (measure one here with perdollar bench --inference)"
    )
    reasons[no_plan & ~cpu_only] = "no latency prediction for this accelerator"
    too_small = cpu_only & ~no_plan & (frame["replicas_per_instance"].to_numpy() < 1)
    if too_small.any():
        reasons[too_small] = (
            f"fewer vCPUs than the {cpu_cores_per_replica:g}-core host the CPU latency curve was measured on"
        )
    frame["excluded_reason"] = reasons
    frame.loc[too_small, "replicas_per_instance"] = 1.0

    replicas = frame["replicas"].to_numpy(dtype=float)
    per_instance = frame["replicas_per_instance"].to_numpy(dtype=float)
    feasible = frame["excluded_reason"] == ""
    frame = billed(
        frame,
        instances=np.ceil(replicas / per_instance).astype(int),
        feasible=feasible.to_numpy(),
        served_per_second={"requests": target.qps},
        spot_overprovision=target.spot_overprovision,
    )
    slow_replicas = np.array(column(lambda p: p.replicas_if_slow, 0), dtype=float)
    slow_instances = np.ceil(slow_replicas / per_instance) + frame["spot_extra_instances"].to_numpy()
    price = frame["price_per_hour"].to_numpy(dtype=float)
    frame["deployment_price_per_hour_high"] = np.where(slow_replicas > 0, slow_instances * price, math.nan)
    frame["usd_per_million_requests_high"] = (
        frame["deployment_price_per_hour_high"] / (target.qps * SECONDS_PER_HOUR) * 1e6
    )
    frame["feasible"] = feasible
    return ranked(frame, "usd_per_million_requests", "latency_ms")


def billed(
    frame: pd.DataFrame,
    *,
    instances: np.ndarray,
    feasible: np.ndarray,
    served_per_second: Mapping[str, float],
    spot_overprovision: float | None,
) -> pd.DataFrame:
    """The one pricer of serving deployments, per request or per token: spot spares added to the
    ``instances`` each deployment needs, the bill of all of them (USD/h; NaN where infeasible),
    and that bill per million of each unit served (``served_per_second``: unit → rate)."""
    is_spot = (frame["market"] == "spot").to_numpy()
    extra = spot_extra_instances(instances, frame["interruption_bucket"].tolist(), spot_overprovision)
    frame["spot_extra_instances"] = np.where(is_spot & (instances > 0), extra, 0)
    frame["instances"] = (instances + frame["spot_extra_instances"].to_numpy()).astype(int)
    price = frame["price_per_hour"].to_numpy(dtype=float)
    bill = np.where(feasible, frame["instances"].to_numpy(dtype=float) * price, math.nan)
    frame["deployment_price_per_hour"] = bill
    for unit, per_second in served_per_second.items():
        frame[f"usd_per_million_{unit}"] = bill / (per_second * SECONDS_PER_HOUR) * 1e6
    return frame


def plausibly_priced(frame: pd.DataFrame) -> pd.Series:
    """True for each row whose price is not flagged implausible (``price-outlier``,
    ``spot-far-below-peers``)."""
    if "flags" not in frame:
        return pd.Series(True, index=frame.index)
    # Flags are a tuple or a ";"-joined string.
    implausible = set(IMPLAUSIBLE_PRICE_FLAGS)
    plausible = map_distinct(
        frame["flags"],
        lambda key: not implausible & set(key if isinstance(key, tuple) else str(key or "").split(";")),
    )
    return pd.Series(plausible, index=frame.index, dtype=bool)


def ranked(frame: pd.DataFrame, cost: str, latency: str) -> pd.DataFrame:
    """Feasible deployments first, cheapest first, the faster first among equals; a price flagged
    implausible (``price-outlier``) after every plausible one, as training rankings do."""
    plausible = plausibly_priced(frame)
    known = pd.to_numeric(frame[cost], errors="coerce").notna()  # an unknown cost ranks after all
    frame = frame.assign(_known=known, _plausible=plausible).sort_values(
        ["feasible", "_known", "_plausible", cost, latency],
        ascending=[False, False, False, True, True],
        na_position="last",
        kind="stable",
    )
    return frame.drop(columns=["_known", "_plausible"]).reset_index(drop=True)


def spot_extra_instances(
    instances: np.ndarray, buckets: Sequence[object], overprovision: float | None
) -> np.ndarray:
    """Instances added on spot so that a reclaim wave does not break the SLO.

    Interruptions come in waves (a capacity pool is reclaimed together), so the plan survives
    losing the upper edge of the pool's monthly interrupted share at once — 5 % for a ``<5%``
    Spot Advisor bucket, 50 % where nothing is published — and always at least one instance.
    ``overprovision`` replaces that share when the user gives one.
    """
    if overprovision is not None:
        share = np.full(len(instances), overprovision)
    else:
        _, _, share = bucket_fractions(np.asarray(list(buckets), dtype=object))
    return np.maximum(1, np.ceil(instances * share)).astype(int)
