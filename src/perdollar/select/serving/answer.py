"""The answer to an inference question: estimates, the explanation, the recommendation."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from perdollar.configuration import Configuration
from perdollar.select.serving.curves import predict_service_curves
from perdollar.select.serving.deployments import (
    cpu_curve,
    filter_offers,
    plan_all,
    price_deployments,
    serving_mode_hint,
)
from perdollar.select.serving.plans import CPU_KEY, DEFAULT_HEADROOM, SECONDS_PER_HOUR, ServingTarget

MAX_FEASIBLE_ESTIMATES = 200


def deployment_estimates(frame: pd.DataFrame, target: ServingTarget) -> tuple[Any, ...]:
    """Estimates for the ranked deployments: the feasible ones, then one excluded row per reason."""
    from perdollar.price.model import Estimate

    feasible = frame[frame["feasible"]].drop_duplicates(["cloud", "instance_type", "market"])
    excluded = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    rows = pd.concat([feasible.head(MAX_FEASIBLE_ESTIMATES), excluded])
    quantile_label = f"p{round(max(target.slo_ms) * 100)}_ms"
    estimates = []
    for row in rows.to_dict("records"):
        price = float(row["deployment_price_per_hour"]) if row["feasible"] else float(row["price_per_hour"])
        serving: dict[str, float | int | str] = {
            "qps": target.qps,
            "slo": target.slo_label,
            "replicas": int(row["replicas"]),
            "replicas_per_instance": int(row["replicas_per_instance"]),
            "spot_extra_instances": int(row["spot_extra_instances"]),
            "batch": int(row["batch"]),
            "max_wait_ms": _finite(row["max_wait_ms"]),
            quantile_label: _finite(row["latency_ms"]),
            f"{quantile_label}_high": _finite(row["latency_high_ms"]),
            "capacity_per_replica_rps": _finite(row["capacity_per_replica"]),
            "rate_per_replica_rps": _finite(row["rate_per_replica"]),
            "utilisation": _finite(row["utilisation"]),
            "usd_per_million_requests": _finite(row["usd_per_million_requests"]),
            "usd_per_million_requests_high": _finite(row["usd_per_million_requests_high"]),
        }
        estimates.append(
            Estimate(
                cloud=str(row["cloud"]),
                instance_type=str(row["instance_type"]),
                region=str(row["region"]),
                market=str(row["market"]),
                nodes=int(row["instances"]),
                accelerator=row["accelerator_key"] or None,
                accelerators_per_node=float(row["accelerator_count"] or 0.0),
                samples_per_second=target.qps,
                samples_per_second_low=target.qps,
                samples_per_second_high=target.qps,
                basis=row["basis"],
                bottleneck=str(row["bottleneck"]),
                price_per_hour=price,
                samples_per_dollar=(
                    target.qps * SECONDS_PER_HOUR / price if row["feasible"] and price > 0 else 0.0
                ),
                time_to_target_hours=None,
                cost_to_target_usd=None,
                expected_time_hours=None,
                expected_cost_usd=None,
                p_meet_deadline=None,
                fits=not row["excluded_reason"].startswith("needs"),
                excluded_reason=str(row["excluded_reason"]),
                interruption_bucket=row.get("interruption_bucket") or None,
                captured_at=str(row.get("captured_at", "")),
                vcpus_per_node=float(row.get("vcpus") or 0.0),
                network_gbps=_finite(row.get("network_gbps")),
                serving=serving,
            )
        )
    return tuple(estimates)


def deployment_label(row: pd.Series | Mapping[str, Any]) -> str:
    """The deployment's configuration label, ``2x g5.xlarge spot (aws us-east-1)``."""
    parts = (str(row["instance_type"]), str(row["market"]), str(row["cloud"]), str(row["region"]))
    return Configuration(int(row["instances"]), *parts).label


def _finite(value: Any) -> float:
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


@dataclass(frozen=True)
class ServingAnswer:
    recommendation: Any  # perdollar.select.model.Recommendation
    frame: pd.DataFrame  # every offer, ranked, with its plan or exclusion
    hint: tuple[str, str]  # serving mode, why


def recommend_serving(
    workload: Any,
    target: ServingTarget,
    *,
    catalog: Any = None,
    measured: Mapping[str, Mapping[int, tuple[float, float, float]]] | None = None,
    cpu_measured: tuple[float, Mapping[int, tuple[float, float, float]]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ServingAnswer:
    """The whole inference question: curves → plans → priced deployments → recommendation.

    ``measured``: local curves by accelerator key; ``cpu_measured``: (host cores, curve) of a
    CPU host, which makes CPU-only instances candidates.
    """
    from perdollar.select.model import Question, Recommendation

    if catalog is None:
        from perdollar.catalog import load

        catalog = load()
    offers = filter_offers(catalog.offers_frame(), target)
    keys = sorted({str(k) for k in offers["accelerator_key"].dropna().unique() if k})
    curves = predict_service_curves(
        workload,
        catalog,
        keys,
        batch_sizes=target.batch_sizes(),
        calibration=None,
        measured=measured,
        progress=progress,
    )
    if progress:
        progress(f"sizing deployments on {len(curves)} accelerators")
    cores = None
    if cpu_measured is not None and cpu_measured[1]:
        cores = float(cpu_measured[0])
        curves = {**curves, CPU_KEY: cpu_curve(cpu_measured[1])}
    plans = plan_all(curves, offers, target)
    frame = price_deployments(plans, offers, target, cpu_cores_per_replica=cores)
    payload = workload.with_overrides(batch_size=1, kind="inference")
    from perdollar.profile import profile_workload

    payload_bytes = target.payload_bytes or profile_workload(payload).input_bytes_per_sample
    hint = serving_mode_hint(target.qps, min(target.slo_ms.values()), payload_bytes)
    estimates = deployment_estimates(frame, target)
    feasible_count = sum(1 for e in estimates if e.feasible)
    question = Question(
        workload_name=workload.name,
        workload_fingerprint=workload.fingerprint,
        kind="inference",
        objective="usd-per-million-requests",
        market=_market_word(target.markets),
        clouds=target.clouds,
        regions=target.regions,
        options={
            "qps": target.qps,
            "slo_ms": {f"p{round(q * 100)}": ms for q, ms in target.slo_ms.items()},
            "headroom": target.headroom,
            "max_wait_ms": target.max_wait_ms,
            "batch_size": workload.batch_size,
            "precision": workload.precision,
            "spot_overprovision": target.spot_overprovision,
            "max_batch": target.max_batch,
            "serving_mode": hint[0],
        },
    )
    recommendation = Recommendation(
        question=question,
        estimates=estimates,
        pareto=tuple(range(min(feasible_count, 1))),
        explanation=explain_serving(frame, target, hint),
        catalog_captured_at=str(getattr(catalog, "captured_at", "")),
        catalog_snapshot_id=str(getattr(catalog, "snapshot_id", "")),
        created_at=pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
        notes=(
            f"queueing: closed-form M/D/1 with dynamic batching, sized for {target.headroom:g}× the rate",
            f"serving mode: {hint[0]}",
        ),
    )
    return ServingAnswer(recommendation, frame, hint)


def _market_word(markets: tuple[str, ...]) -> str:
    return markets[0] if len(markets) == 1 else "any"


def answer_serving(question: Any, *, catalog: Any = None) -> ServingAnswer:
    """Ask a stored inference :class:`Question` again (today's catalog, same workload and SLO)."""
    from perdollar.workload import load_workload

    options = dict(question.options)
    slo = {float(label[1:]) / 100: float(ms) for label, ms in options.get("slo_ms", {}).items()}
    markets = ("on-demand", "spot") if question.market in ("any", "") else (question.market,)
    target = ServingTarget(
        qps=float(options["qps"]),
        slo_ms=slo,
        headroom=float(options.get("headroom", DEFAULT_HEADROOM)),
        max_wait_ms=options.get("max_wait_ms"),
        markets=markets,
        clouds=tuple(question.clouds),
        regions=tuple(question.regions),
        spot_overprovision=options.get("spot_overprovision"),
        max_batch=options.get("max_batch"),
    )
    workload = load_workload(
        question.workload_name,
        batch_size=options.get("batch_size"),
        precision=options.get("precision"),
        kind="inference",
    )
    return recommend_serving(workload, target, catalog=catalog)
