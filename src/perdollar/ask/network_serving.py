"""A serving question, answered: latency curves → replica plans → priced deployments → ranking.

Per accelerator the predictor's latency-vs-batch curve (replaced by a local measurement on the
same hardware), per (accelerator, device fraction) the replica plan that serves the rate within
the SLO, per offer the price of the deployment, and the select stage's ranking and explanation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd

from perdollar.ask.inputs import Progress, quiet
from perdollar.ask.near import chosen_region, near_notes
from perdollar.ask.offers import (
    billed_offers,
    check_market,
    in_market,
    left_out_notes,
    market_names,
    quota_excluded,
)
from perdollar.ask.policy import check_policy
from perdollar.catalog import Catalog
from perdollar.errors import PerdollarError
from perdollar.goals import ServingGoal
from perdollar.measure.result import Measurement
from perdollar.predict.network_serving import (
    CPU_KEY,
    ServingTarget,
    cpu_curve,
    measured_curves,
    plan_all,
    predict_service_curves,
)
from perdollar.price.network_serving import price_deployments, ranked
from perdollar.profile import profile_workload
from perdollar.profile.profiler import profile_workloads
from perdollar.question import Question
from perdollar.select.model import Recommendation
from perdollar.select.network_serving import deployment_estimates, explain_serving, serving_mode_hint
from perdollar.select.ranking import with_price_sentences
from perdollar.vocabulary import MARKETS
from perdollar.workload import Workload


@dataclass(frozen=True)
class ServingAnswer:
    recommendation: Recommendation
    frame: pd.DataFrame  # every offer, ranked, with its plan or exclusion
    hint: tuple[str, str]  # serving mode, why
    target: ServingTarget


def serving_target(question: Question) -> ServingTarget:
    goal = question.goal
    if not isinstance(goal, ServingGoal):
        raise PerdollarError("a serving question needs a request rate and an SLO", "add --qps and --p99-ms")
    check_market(question.market)
    return ServingTarget(
        qps=goal.qps,
        slo_ms=goal.slo,
        headroom=goal.headroom,
        max_wait_ms=goal.max_wait_ms,
        markets=MARKETS if question.market == "any" else market_names(question.market),
        clouds=tuple(c.lower() for c in question.clouds),
        regions=question.regions,
        spot_overprovision=goal.spot_overprovision,
        max_batch=goal.max_batch,
    )


def answer_serving(
    question: Question,
    *,
    catalog: Catalog,
    workload: Workload,
    measurements: Sequence[Measurement] = (),
    progress: Progress = quiet,
) -> ServingAnswer:
    """The whole inference question; a measured CPU host's curve makes CPU-only instances candidates."""
    check_policy(question)
    target = serving_target(question)
    question = replace(question, workload_fingerprint=workload.fingerprint, workload_label=workload.name)
    every_market = billed_offers(question, catalog, use="inference", priced_only=True)
    offers = in_market(every_market, question)
    keys = sorted({str(k) for k in offers["accelerator_key"].dropna().unique() if k})
    batches = list(target.batch_sizes())
    progress(f"profiling the forward pass at batch sizes {', '.join(map(str, batches))}")
    traced = profile_workloads([workload.with_overrides(batch_size=b, kind="inference") for b in batches])
    profiles = dict(zip(batches, traced, strict=True))
    measured, cpu_measured = measured_curves(measurements)
    curves = predict_service_curves(
        profiles, catalog.accelerators, keys, precision=workload.precision, measured=measured
    )
    progress(f"sizing deployments on {len(curves)} accelerators")
    cores = None
    if cpu_measured is not None and cpu_measured[1]:
        cores = float(cpu_measured[0])
        curves = {**curves, CPU_KEY: cpu_curve(cpu_measured[1])}
    frame = price_deployments(plan_all(curves, offers, target), offers, target, cpu_cores_per_replica=cores)
    if question.bill.quotas:
        frame = ranked(quota_excluded(frame, question, "instances"), "usd_per_million_requests", "latency_ms")
    payload_bytes = target.payload_bytes or _bytes_per_request(workload)
    hint = serving_mode_hint(target.qps, min(target.slo_ms.values()), payload_bytes)
    estimates = deployment_estimates(frame, target)
    feasible_count = sum(1 for e in estimates if e.feasible)
    created_at = pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds")
    recommendation = Recommendation(
        question=question,
        estimates=estimates,
        pareto=tuple(range(min(feasible_count, 1))),
        explanation=with_price_sentences(explain_serving(frame, target, hint), estimates, created_at),
        catalog_captured_at=str(catalog.captured_at),
        catalog_snapshot_id=str(catalog.snapshot_id),
        created_at=created_at,
        notes=(
            f"queueing: closed-form M/D/1 with dynamic batching, sized for {target.headroom:g}× the rate",
            f"serving mode: {hint[0]}",
            *left_out_notes(every_market, question),
            *near_notes(question, every_market, chosen_region(frame), catalog.offers_frame()),
        ),
        sample_unit="requests",
    )
    return ServingAnswer(recommendation, frame, hint, target)


def _bytes_per_request(workload: Workload) -> float:
    """One request's input bytes (the profile at batch 1 is cached when the curves traced it)."""
    return profile_workload(workload.with_overrides(batch_size=1, kind="inference")).input_bytes_per_sample
