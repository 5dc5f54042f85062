"""Ranking a serving question's priced deployments: the estimates kept, the explanation, the mode."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import SupportsFloat

import pandas as pd

from perdollar.configuration import Configuration
from perdollar.predict.network_serving.plans import ServingTarget
from perdollar.price.model import Estimate, ServingFigures
from perdollar.select.estimates import deployment_estimate

MAX_FEASIBLE_ESTIMATES = 200


def deployment_estimates(frame: pd.DataFrame, target: ServingTarget) -> tuple[Estimate, ...]:
    """Estimates for the ranked deployments: the feasible ones, then one excluded row per reason."""
    feasible = frame[frame["feasible"]].drop_duplicates(["cloud", "instance_type", "market"])
    excluded = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    rows = pd.concat([feasible.head(MAX_FEASIBLE_ESTIMATES), excluded])
    quantile = max(target.slo_ms)
    estimates = []
    for row in rows.to_dict("records"):
        price = float(row["deployment_price_per_hour"]) if row["feasible"] else float(row["price_per_hour"])
        figures = ServingFigures(
            requests_per_second=target.qps,
            slo=target.slo_label,
            replicas=int(row["replicas"]),
            replicas_per_instance=int(row["replicas_per_instance"]),
            spot_extra_instances=int(row["spot_extra_instances"]),
            batch=int(row["batch"]),
            price_per_instance_per_hour=float(row["price_per_hour"]),
            utilisation=_finite(row["utilisation"]),
            max_wait_ms=_finite(row["max_wait_ms"]),
            latency_quantile=quantile,
            latency_ms=_finite(row["latency_ms"]),
            latency_high_ms=_finite(row["latency_high_ms"]),
            capacity_per_replica_rps=_finite(row["capacity_per_replica"]),
            rate_per_replica_rps=_finite(row["rate_per_replica"]),
            usd_per_million_requests=_finite(row["usd_per_million_requests"]),
            usd_per_million_requests_high=_finite(row["usd_per_million_requests_high"]),
        )
        estimates.append(
            deployment_estimate(
                row,
                instances=int(row["instances"]),
                rate=target.qps,
                price_per_hour=price,
                fits=not row["excluded_reason"].startswith("needs"),
                figures=figures,
            )
        )
    return tuple(estimates)


def deployment_label(row: pd.Series | Mapping[str, object]) -> str:
    """The deployment's configuration label, ``2x g5.xlarge spot (aws us-east-1)``."""
    parts = (str(row["instance_type"]), str(row["market"]), str(row["cloud"]), str(row["region"]))
    return Configuration(int(_finite(row["instances"])), *parts).label


def _finite(value: object) -> float:
    if not isinstance(value, SupportsFloat | str):
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def explain_serving(frame: pd.DataFrame, target: ServingTarget, hint: tuple[str, str]) -> str:
    """Why the top deployment wins, what the runner-up and on-demand alternative cost, the mode."""
    lines = []
    feasible = frame[frame["feasible"]]
    quantile = max(target.slo_ms)
    label = f"P{round(quantile * 100)}"
    if feasible.empty:
        lines.append(f"Nothing serves {target.qps:g} requests/s within {target.slo_label}.")
    else:
        top = feasible.iloc[0]
        lines.append(
            f"Cheapest: {deployment_label(top)}, {int(top['replicas'])} replica(s) at batch "
            f"≤ {int(top['batch'])} with "
            f"≤ {top['max_wait_ms']:.2g} ms batching wait; predicted {label} {top['latency_ms']:.3g} ms "
            f"at {target.headroom:g}× the target rate ({top['basis']}), "
            f"${top['usd_per_million_requests']:.3g} per million requests."
        )
        other_machine = (feasible["cloud"] != top["cloud"]) | (
            feasible["instance_type"] != top["instance_type"]
        )
        others = feasible[other_machine]
        if not others.empty:
            runner = others.iloc[0]
            ratio = runner["usd_per_million_requests"] / top["usd_per_million_requests"]
            lines.append(
                f"Runner-up: {runner['instance_type']} {runner['market']} ({runner['cloud']}), "
                f"{ratio:.2g}× the cost per request."
            )
        if top["market"] == "spot":
            on_demand = feasible[feasible["market"] == "on-demand"]
            if not on_demand.empty:
                best = on_demand.iloc[0]
                lines.append(
                    f"Best on-demand: {best['instance_type']} ({best['cloud']}) at "
                    f"${best['usd_per_million_requests']:.3g} per million requests; spot counts "
                    f"{int(top['spot_extra_instances'])} extra instance(s) against reclaim waves."
                )
    served = set(feasible["accelerator_key"].dropna())
    reasons = frame[~frame["feasible"] & ~frame["accelerator_key"].isin(served)]
    slo_misses = reasons[reasons["excluded_reason"].str.contains("SLO")].drop_duplicates("accelerator_key")
    if not slo_misses.empty:
        names = ", ".join(sorted(str(k) for k in slo_misses["accelerator_key"].head(6)))
        lines.append(f"Excluded for missing the SLO at every batch size: {names}.")
    lines.append(f"Serving mode: {hint[0]} — {hint[1]}.")
    return "\n".join(lines)


def serving_mode_hint(qps: float, slo_ms: float | None, payload_bytes: float) -> tuple[str, str]:
    """Which way to serve (real-time, serverless, asynchronous, batch) and why.

    The limits are those of the managed services that embody each mode (SageMaker's: real-time
    payloads up to 6 MB, asynchronous up to 1 GB with up to 15 minutes per request, serverless
    scaling to zero with cold starts of seconds).
    """
    if payload_bytes > 6e6:
        return (
            "asynchronous",
            f"requests of {payload_bytes / 1e6:.3g} MB exceed real-time payload limits "
            "(6 MB); queue them and poll, scaling to zero when idle",
        )
    if slo_ms is None or slo_ms >= 60_000:
        return (
            "batch",
            "no interactive latency need: run periodic batch jobs at full utilisation "
            "and pay only while they run",
        )
    if qps < 1.0 and slo_ms >= 5_000:
        return (
            "serverless",
            f"{qps:g} requests/s leaves a dedicated replica idle most of the time, and a "
            f"{slo_ms / 1e3:g} s SLO tolerates cold starts: pay per request, scale to zero",
        )
    if qps < 1.0:
        return (
            "real-time (small)",
            f"{qps:g} requests/s is light, but a {slo_ms:g} ms SLO rules out cold "
            "starts: one always-on replica, the smallest that meets the SLO",
        )
    return (
        "real-time",
        f"{qps:g} requests/s with a {slo_ms:g} ms SLO needs always-on replicas "
        "behind a load balancer, autoscaled on requests per replica",
    )
