"""A sweep's jobs: one per candidate estimate, the first ones to launch, and a record of each outcome.

Asking the question and re-ranking after each result is the application layer's
(:mod:`perdollar.ask.sweep`); this module turns estimates into jobs and outcomes into records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from perdollar.catalog import Catalog
from perdollar.errors import PerdollarError
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.outcome import JobOutcome
from perdollar.launch.spec import BenchmarkJob
from perdollar.launch.strategy import rank_picks, top_k_order
from perdollar.launch.sweep import (
    POOL_SIZE,
    SweepSettings,
    beliefs_for,
    distinct_candidates,
    hardware_key,
)
from perdollar.measure.result import HostFingerprint, Measurement, Status
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation
from perdollar.workload import Workload


@dataclass(frozen=True, slots=True)
class SweepContext:
    """What the jobs of a sweep are made from: the workload as the user named it, built, and the catalog."""

    workload_spec: str
    workload: Workload
    catalog: Catalog | None


def job_factory(bundle: SweepContext, options: JobOptions) -> Callable[[Estimate, int], BenchmarkJob]:
    """Estimate → job, with the catalog's own accelerator name (SkyPilot speaks it too)."""

    def make(estimate: Estimate, index: int) -> BenchmarkJob:
        accelerator_name = None
        if bundle.catalog is not None:
            try:
                instance = bundle.catalog.instance(estimate.instance_type, estimate.cloud)
                accelerator_name = instance.accelerator_name
            except PerdollarError:  # not in this catalog: SkyPilot infers the chip from the instance
                accelerator_name = None
        return job_for_estimate(estimate, index, options, accelerator_name=accelerator_name)

    return make


def failure_measurement(outcome: JobOutcome, bundle: SweepContext) -> Measurement:
    """A stored record of a job that produced no measurement (not provisioned, crashed, killed)."""
    job = outcome.job
    resources = job.resources
    host = HostFingerprint(
        cpu_model="unknown",
        cpu_cores=0,
        memory_gib=0,
        accelerator=resources.accelerator,
        accelerator_key=None,
        accelerator_count=int(resources.accelerator_count),
        driver=None,
        instance_type=resources.instance_type,
        cloud=resources.cloud,
    )
    if outcome.executor == "local":
        try:
            from perdollar.measure import host_fingerprint

            host = host_fingerprint()
        except Exception:  # the record matters more than its host details
            pass
    status: Status = "timeout" if outcome.status == "timeout" else "error"
    return Measurement(
        status=status,
        mode=job.mode,
        workload_name=bundle.workload.name,
        workload_fingerprint=bundle.workload.fingerprint,
        batch_size=bundle.workload.batch_size,
        precision=bundle.workload.precision,
        host=host,
        started_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        message=f"{outcome.status}: {outcome.reason}",
        duration_s=outcome.wall_seconds,
        extra={
            "executor": outcome.executor,
            "candidate": job.candidate,
            "job": job.name,
            "cost_cap_usd": round(job.caps.max_dollars, 4),
        },
    )


def recorder(
    bundle: SweepContext, *, store_url: str | None, enabled: bool, saved: dict[str, str | None]
) -> Callable[[JobOutcome], None]:
    """Store every outcome: its measurement, or a failure record with the reason."""
    from perdollar.store import open_store

    def record(outcome: JobOutcome) -> None:
        if not enabled or outcome.job.store_url:  # the remote node stored it itself
            saved[outcome.job.name] = None
            return
        measurement = outcome.measurement or failure_measurement(outcome, bundle)
        with open_store(store_url) as store:
            saved[outcome.job.name] = store.save_measurement(measurement, source=f"sweep-{outcome.executor}")

    return record


def plan_first_jobs(
    bundle: SweepContext,
    recommendation: Recommendation,
    options: JobOptions,
    settings: SweepSettings,
    *,
    on_skip: Callable[[str], None] | None = None,
) -> list[tuple[BenchmarkJob, str]]:
    """The jobs a sweep would launch first, in order, each with why it was chosen.

    VOI orders by value of information per dollar on the predictions alone (later picks in a
    real sweep also use the results); top-k by predicted samples/$. Budget and --top apply.
    """
    make = job_factory(bundle, options)
    pool = distinct_candidates(recommendation.estimates, POOL_SIZE)
    jobs: dict[str, BenchmarkJob] = {}
    for index, estimate in enumerate(pool):
        try:
            jobs[hardware_key(estimate)] = make(estimate, index)
        except PerdollarError as error:
            if on_skip:
                on_skip(f"{estimate.label}: {error.one_line()}")
    beliefs = [
        b for b in beliefs_for(pool, {k: j.caps.max_dollars for k, j in jobs.items()}) if b.key in jobs
    ]
    if settings.strategy == "voi":
        order = [
            (p.key, f"VOI {p.value_of_information:.1%} of samples/$, P(change) {p.p_change:.0%}")
            for p in rank_picks(beliefs)
        ]
    else:
        order = [(key, f"predicted rank {i + 1}") for i, key in enumerate(top_k_order(beliefs))]
    limit = settings.max_runs or len(order)
    chosen: list[tuple[BenchmarkJob, str]] = []
    total = 0.0
    for key, why in order:
        if len(chosen) >= limit:
            break
        job = jobs[key]
        if settings.budget_usd is not None and total + job.caps.max_dollars > settings.budget_usd:
            continue
        chosen.append((job, why))
        total += job.caps.max_dollars
    # Numbered in the order they would launch (00, 01, 02 …), not by their place in the pool.
    estimate_of = {hardware_key(estimate): estimate for estimate in pool}
    key_of = {job.name: key for key, job in jobs.items()}
    return [(make(estimate_of[key_of[job.name]], index), why) for index, (job, why) in enumerate(chosen)]


def write_dry_run(jobs: Sequence[BenchmarkJob], out_dir: Path) -> list[Path]:
    from perdollar.launch.skypilot import write_task_yaml

    return [write_task_yaml(job, out_dir) for job in jobs]
