"""A sweep: measure the candidates that can change the answer, then re-rank.

The loop is independent of where candidates come from and where results go: it takes ranked
estimates, a way to turn one into a job, an executor, and a ``rerank`` function that
recalibrates on the measurements so far. A candidate that cannot be provisioned, times out or
crashes is an outcome like any other; the sweep goes on.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal, Protocol

from perdollar.errors import PerdollarError
from perdollar.launch.outcome import JobOutcome
from perdollar.launch.spec import BenchmarkJob
from perdollar.launch.strategy import (
    DEFAULT_CONFIDENCE,
    Belief,
    belief_from_band,
    p_top_is_best,
    rank_picks,
    stop_reason,
    top_k_order,
)
from perdollar.measure.result import Measurement
from perdollar.measure.text import host_label
from perdollar.price.model import Estimate

Strategy = Literal["voi", "top-k"]
# VOI looks at the best few dozen distinct machines: beyond them the chance of overtaking is nil
# and every extra belief only slows the Monte Carlo stability check.
POOL_SIZE = 30


class Executor(Protocol):
    name: str
    billed: bool  # whether its jobs are charged (a cloud) or not (this machine)

    def run(self, job: BenchmarkJob, on_line: Callable[[str], None] | None = None) -> JobOutcome: ...


@dataclass(frozen=True, slots=True)
class SweepSettings:
    strategy: Strategy = "voi"
    max_runs: int | None = 3
    budget_usd: float | None = None
    parallel: int = 2
    confidence: float = DEFAULT_CONFIDENCE


@dataclass(frozen=True, slots=True)
class RunChoice:
    """Why a candidate was measured when it was."""

    key: str
    round: int
    value_of_information: float | None  # expected relative gain in samples/$ (VOI strategy)
    p_change: float | None


@dataclass(frozen=True, slots=True)
class SweepResult:
    strategy: str
    executor: str
    outcomes: tuple[JobOutcome, ...]
    choices: tuple[RunChoice, ...]
    stopped_because: str
    spent_cap_usd: float  # sum of the caps of the jobs that ran: the most the sweep cost where billed
    before: tuple[Estimate, ...]
    after: tuple[Estimate, ...]
    p_top_is_best: float
    changes: tuple[str, ...] = field(default_factory=tuple)
    billed: bool = True  # False: the jobs ran on this machine and nothing was charged

    @property
    def charged_cap_usd(self) -> float:
        """The most the sweep was charged: its caps on a cloud, nothing on this machine."""
        return self.spent_cap_usd if self.billed else 0.0


def hardware_key(estimate: Estimate) -> str:
    """One benchmark serves every region and market of the same machine shape."""
    return f"{estimate.cloud}:{estimate.instance_type}:{estimate.nodes}"


def distinct_candidates(estimates: Sequence[Estimate], limit: int | None = None) -> list[Estimate]:
    """Feasible estimates, best-ranked offer of each machine shape, in rank order."""
    seen: set[str] = set()
    chosen = []
    for estimate in estimates:
        if not estimate.feasible or not estimate.fits or estimate.samples_per_dollar <= 0:
            continue
        key = hardware_key(estimate)
        if key in seen:
            continue
        seen.add(key)
        chosen.append(estimate)
        if limit is not None and len(chosen) >= limit:
            break
    return chosen


def _sps_to_spd(estimate: Estimate, samples_per_second: float) -> float:
    return samples_per_second * 3600 / estimate.price_per_hour if estimate.price_per_hour else 0.0


def beliefs_for(estimates: Sequence[Estimate], run_costs: dict[str, float]) -> list[Belief]:
    """Beliefs in the samples/$ that ranks each estimate (spot: after expected interruption losses)."""
    beliefs = []
    for estimate in estimates:
        key = hardware_key(estimate)
        value = estimate.effective_samples_per_dollar or estimate.samples_per_dollar
        # The band is a throughput band; spot losses scale it by the same factor as the value.
        scale = value / estimate.samples_per_dollar if estimate.samples_per_dollar else 1.0
        beliefs.append(
            belief_from_band(
                key,
                value,
                _sps_to_spd(estimate, estimate.samples_per_second_low) * scale,
                _sps_to_spd(estimate, estimate.samples_per_second_high) * scale,
                run_costs.get(key, 1e9),
                measured=estimate.basis == "measured",
            )
        )
    return beliefs


def describe_changes(
    before: Sequence[Estimate],
    after: Sequence[Estimate],
    measured_keys: set[str],
    measured_elsewhere: Mapping[str, str] | None = None,
) -> list[str]:
    """Plain sentences: did the top choice move, and how did each measured candidate's figure move.

    ``measured_elsewhere`` names, per candidate, the host its measurement ran on when that is not
    the candidate's own machine (a local run): such a measurement calibrates only candidates with
    that host's hardware, and where it moved nothing the sentence says so instead of a change.
    """
    lines: list[str] = []
    if not before or not after:
        return lines
    elsewhere = measured_elsewhere or {}
    old_rank = {hardware_key(e): (i, e) for i, e in reversed(list(enumerate(before)))}
    new_rank = {hardware_key(e): (i, e) for i, e in reversed(list(enumerate(after)))}
    compared = [key for key in sorted(measured_keys) if key in old_rank]
    moved = {
        key for key in compared if key not in new_rank or _figure_moved(old_rank[key][1], new_rank[key][1])
    }
    old_top, new_top = before[0], after[0]
    if hardware_key(old_top) != hardware_key(new_top):
        lines.append(
            f"top choice changed: {old_top.label} → {new_top.label} "
            f"({new_top.samples_per_dollar:,.0f} samples/$, {new_top.basis})"
        )
    elif compared and not moved:
        lines.append(
            f"top choice unchanged: {new_top.label} ({new_top.samples_per_dollar:,.0f} samples/$, "
            f"{new_top.basis}): no measurement moved a prediction"
        )
    else:
        lines.append(
            f"top choice unchanged: {new_top.label} "
            f"({old_top.samples_per_dollar:,.0f} → {new_top.samples_per_dollar:,.0f} samples/$, "
            f"{old_top.basis} → {new_top.basis})"
        )
    for key in compared:
        i, old = old_rank[key]
        if key not in new_rank:  # its measured figure no longer ranks it among those the answer keeps
            lines.append(
                f"{old.instance_type} ({old.cloud}): rank {i + 1} → no longer among the {len(after)} "
                "candidates the re-ranked answer keeps"
            )
            continue
        j, new = new_rank[key]
        if key not in moved and key in elsewhere:
            lines.append(
                f"{new.instance_type} ({new.cloud}): measured on {elsewhere[key]}, not on a "
                f"{new.instance_type}, so its prediction stays {new.basis} (rank {j + 1})"
            )
            continue
        ratio = new.samples_per_second / old.samples_per_second if old.samples_per_second else float("nan")
        lines.append(
            f"{new.instance_type} ({new.cloud}): rank {i + 1} → {j + 1}, "
            f"{old.samples_per_second:,.3g} → {new.samples_per_second:,.3g} samples/s "
            f"(×{ratio:.2f}, {old.basis} → {new.basis})"
        )
    return lines


def _figure_moved(old: Estimate, new: Estimate) -> bool:
    return new.basis != old.basis or not math.isclose(new.samples_per_second, old.samples_per_second)


@dataclass(frozen=True, slots=True)
class SweepProgress:
    """After each job: how many ran of how many at most, and the money charged against the cap."""

    finished: int
    planned: int  # the most jobs this sweep may run (it can stop sooner)
    spent_usd: float  # each finished job counted at its cost cap: the most it can have cost
    budget_usd: float | None


def run_sweep(
    ranked: Sequence[Estimate],
    make_job: Callable[[Estimate, int], BenchmarkJob],
    executor: Executor,
    settings: SweepSettings,
    *,
    rerank: Callable[[Sequence[Measurement]], Sequence[Estimate]] | None = None,
    record: Callable[[JobOutcome], object] | None = None,
    on_event: Callable[[str, object], None] | None = None,
) -> SweepResult:
    """Measure candidates by ``settings.strategy`` until the choice is stable or the money is spent."""
    if settings.parallel < 1:
        raise PerdollarError(
            f"--parallel {settings.parallel} is not a number of launches",
            "give a positive number such as --parallel 2",
        )
    notify = on_event or (lambda kind, payload: None)
    before = tuple(ranked)
    pool = distinct_candidates(before, POOL_SIZE)
    if not pool:
        raise PerdollarError("no feasible candidate to measure", "relax the constraints of the question")
    jobs: dict[str, BenchmarkJob] = {}
    refusals: list[str] = []
    for index, estimate in enumerate(pool):
        try:
            jobs[hardware_key(estimate)] = make_job(estimate, index)
        except PerdollarError as error:  # e.g. its cost cap leaves no time to measure
            refusals.append(error.one_line())
            notify("skip", f"{estimate.label}: {error.one_line()}")
    if not jobs:
        raise PerdollarError(
            f"no candidate could be turned into a benchmark job ({refusals[0]})",
            "adjust the caps (--duration, --max-dollars-per-run)",
        )
    run_costs = {key: job.caps.max_dollars for key, job in jobs.items()}
    estimate_of = {hardware_key(estimate): estimate for estimate in pool}
    current = list(pool)
    fixed_order = top_k_order(beliefs_for(pool, run_costs))
    confidence = settings.confidence if settings.strategy == "voi" else math.inf
    done: set[str] = set()
    outcomes: list[JobOutcome] = []
    choices: list[RunChoice] = []
    measurements: list[Measurement] = []
    spent = 0.0
    reranked: Sequence[Estimate] | None = None
    round_number = 0
    while True:
        beliefs = [b for b in beliefs_for(current, run_costs) if b.key in jobs]
        unrunnable = set(done)
        reason = stop_reason(
            beliefs,
            confidence=confidence,
            spent_usd=spent,
            budget_usd=settings.budget_usd,
            runs=len(done),
            max_runs=settings.max_runs,
            exclude=unrunnable,
        )
        if reason:
            break
        batch: list[BenchmarkJob] = []
        batch_keys: list[str] = []
        if settings.strategy == "voi":
            picks = rank_picks(beliefs, exclude=unrunnable)
            order: list[tuple[str, float | None, float | None]] = [
                (p.key, p.value_of_information, p.p_change) for p in picks
            ]
        else:
            order = [(key, None, None) for key in fixed_order if key not in unrunnable]
        budget_left = (settings.budget_usd - spent) if settings.budget_usd is not None else math.inf
        for key, value, p_change in order:
            if len(batch) >= settings.parallel or (
                settings.max_runs is not None and len(done) + len(batch) >= settings.max_runs
            ):
                break
            if run_costs[key] > budget_left:
                continue
            # Numbered in the order launched, as the dry run numbers its task files: 00, 01, 02 …
            jobs[key] = make_job(estimate_of[key], len(done) + len(batch))
            batch.append(jobs[key])
            batch_keys.append(key)
            budget_left -= run_costs[key]
            choices.append(RunChoice(key, round_number, value, p_change))
        if not batch:
            reason = "no affordable candidate left"
            break
        notify("round", [job.candidate for job in batch])
        with ThreadPoolExecutor(max_workers=settings.parallel) as threads:
            results = list(threads.map(lambda job: _run_one(executor, job, notify), batch))
        for outcome in results:
            outcomes.append(outcome)
            spent += outcome.spent_usd_cap
            if outcome.measurement is not None:
                measurements.append(outcome.measurement)
            if record is not None:
                try:
                    record(outcome)
                except Exception as error:  # a store hiccup must not lose the other results
                    notify("record-failed", f"{outcome.job.candidate}: {type(error).__name__}: {error}")
            notify("outcome", outcome)
            planned = min(len(jobs), settings.max_runs) if settings.max_runs is not None else len(jobs)
            notify("progress", SweepProgress(len(outcomes), planned, spent, settings.budget_usd))
        done.update(batch_keys)
        round_number += 1
        if rerank is not None and any(o.ok for o in results):
            reranked = rerank(measurements)
            by_key = {hardware_key(e): e for e in distinct_candidates(reranked, None)}
            current = [by_key.get(hardware_key(e), e) for e in pool]
    after = tuple(reranked) if reranked is not None else before
    final_beliefs = beliefs_for(distinct_candidates(after, POOL_SIZE), run_costs)
    key_of = {job.name: key for key, job in jobs.items()}
    measured = {key_of[o.job.name]: o.measurement for o in outcomes if o.ok and o.measurement is not None}
    elsewhere = {
        key: host_label(measurement.host)
        for key, measurement in measured.items()
        if measurement.host.instance_type != jobs[key].resources.instance_type
    }
    return SweepResult(
        strategy=settings.strategy,
        executor=executor.name,
        outcomes=tuple(outcomes),
        choices=tuple(choices),
        stopped_because=reason,
        spent_cap_usd=spent,
        before=before,
        after=after,
        p_top_is_best=p_top_is_best(final_beliefs) if final_beliefs else 1.0,
        changes=tuple(describe_changes(before, after, set(measured), elsewhere)),
        billed=getattr(executor, "billed", True),
    )


def _run_one(executor: Executor, job: BenchmarkJob, notify: Callable[[str, object], None]) -> JobOutcome:
    notify("start", job)
    try:
        return executor.run(job)
    except Exception as error:  # an executor bug for one candidate must not end the sweep
        return JobOutcome(job, executor.name, "crashed", f"{type(error).__name__}: {error}", None, 0.0)
