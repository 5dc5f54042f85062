"""Which isolation mode bounds a workload, and the largest batch that fits.

The verdict compares the three modes the way the performance checklist does: the cached-input
rate is the ceiling without the input pipeline, data-only is what the host can feed, and a full
run noticeably below the ceiling is input-bound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from perdollar.fmt import format_number
from perdollar.measure.loop import LoopSettings
from perdollar.measure.result import Measurement, Rate

# Gaps smaller than this are within the noise of two separate runs.
NOISE = 0.05


def _overlap(first: Rate, second: Rate) -> bool:
    return first.low <= second.high and second.low <= first.high


def _shown(rate: Rate) -> str:
    """A rate as the bench prints it (the same digits), so that the verdict quotes its figures."""
    return f"{format_number(rate.median, (rate.high - rate.low) / 2 or None)} samples/s"


def _apart(first: Rate, second: Rate) -> bool:
    """Their medians differ by more than the noise and their confidence intervals do not overlap."""
    return abs(1 - first.median / second.median) > NOISE and not _overlap(first, second)


AGAIN = "measure again on a quieter machine or for longer"


def bound_verdict(rates: Mapping[str, Rate]) -> str:
    """One line: input-bound or compute-bound, and by how much, from the samples/s of each mode.

    A gap counts only when it is beyond the noise and the two confidence intervals do not
    overlap; otherwise the verdict says the runs cannot tell. A full run cannot beat the ceiling
    without the input pipeline, nor reach it when the pipeline alone feeds less: figures that
    say so are called unclear, never read as a verdict.
    """
    ceiling = rates.get("cached-input")
    full, feed = rates.get("full"), rates.get("data-only")
    if not ceiling or ceiling.median <= 0:
        return "no verdict: measure --mode cached-input for the ceiling without the input pipeline"
    if full is not None:
        return _full_verdict(full, ceiling, feed)
    if feed is not None:
        if feed.median >= ceiling.median:
            return (
                f"compute-bound: the input pipeline alone feeds {_shown(feed)}, "
                f"{feed.median / ceiling.median:.2g}× the {_shown(ceiling)} the model consumes"
            )
        if _apart(feed, ceiling):
            return (
                f"input-bound: the input pipeline feeds {_shown(feed)}, "
                f"{1 - feed.median / ceiling.median:.0%} below the cached-input ceiling of {_shown(ceiling)}"
            )
        return (
            f"unclear: the input pipeline alone feeds {_shown(feed)}, within the noise of the "
            f"{_shown(ceiling)} the model consumes; measure --mode full as well"
        )
    return "no verdict: measure --mode full or --mode data-only as well"


def _full_verdict(full: Rate, ceiling: Rate, feed: Rate | None) -> str:
    gap = 1 - full.median / ceiling.median  # above zero: the full run is slower than the ceiling
    side = f"{abs(gap):.0%} {'below' if gap > 0 else 'above'} the cached-input ceiling"
    figures = f"full {_shown(full)}, cached input {_shown(ceiling)}"
    if abs(gap) <= NOISE:
        if feed is not None and feed.median < ceiling.median and _apart(feed, ceiling):
            return (
                f"unclear: the full run is within {abs(gap):.0%} of the cached-input ceiling ({figures}), "
                f"yet the input pipeline alone feeds only {_shown(feed)}; {AGAIN}"
            )
        return f"compute-bound: the full run is within {abs(gap):.0%} of the cached-input ceiling ({figures})"
    if _overlap(full, ceiling):
        return f"unclear: the full run is {side} ({figures}), but their confidence intervals overlap; {AGAIN}"
    if gap < 0:
        return (
            f"unclear: the full run is {side} ({figures}), which the input pipeline cannot cause: "
            f"the cached-input run was slowed; {AGAIN}"
        )
    if feed is None:
        return f"input-bound: {side} ({figures})"
    if feed.median < ceiling.median:
        return f"input-bound: {side} ({figures}); the input pipeline alone feeds only {_shown(feed)}"
    return (
        f"input-bound: {side} ({figures}), though the input pipeline alone feeds {_shown(feed)} "
        f"({feed.median / ceiling.median:.2g}× the ceiling): its work inside each step, not its rate, "
        "slows the run (load ahead in worker processes so that it overlaps the step)"
    )


def verdict_for(measurements: list[Measurement]) -> str:
    rates: dict[str, Rate] = {
        m.mode: m.samples_per_second for m in measurements if m.ok and m.samples_per_second
    }
    return bound_verdict(rates)


@dataclass(frozen=True)
class MaxBatch:
    largest_fitting: int | None  # None: not even the smallest batch fits
    smallest_failing: int | None  # None: everything up to the limit fits
    probes: tuple[tuple[int, str], ...] = field(default_factory=tuple)  # (batch, status) in order
    message: str = ""


def probe_settings(duration_s: float) -> LoopSettings:
    # A probe only has to show that a few steps run: short warm-up, one block is enough.
    return LoopSettings(
        duration_s=duration_s,
        min_blocks=1,
        min_warmup_steps=1,
        warmup_window=1,
        warmup_share=0.6,
        block_seconds=0.05,
        target_precision=1.0,
    )


def find_max_batch(
    spec: Any,
    *,
    start: int | None = None,
    limit: int = 65536,
    probe: Callable[[int], Measurement] | None = None,
    precision: str | None = None,
    device: str = "auto",
    probe_duration_s: float = 2.0,
    memory_limit_bytes: int | None = None,
    on_probe: Callable[[int, str], None] | None = None,
) -> MaxBatch:
    """Double the batch until it does not fit (oom), then bisect between the last fit and the failure.

    A probe that fails for any reason other than memory stops the search: the answer would not
    be about memory.
    """
    from perdollar.measure.runner import run_benchmark

    def default_probe(batch: int) -> Measurement:
        return run_benchmark(
            spec,
            mode="cached-input",
            batch_size=batch,
            precision=precision,
            device=device,
            duration_s=probe_duration_s,
            settings=probe_settings(probe_duration_s),
            memory_limit_bytes=memory_limit_bytes,
        )

    run = probe or default_probe
    probes: list[tuple[int, str]] = []

    def fits(batch: int) -> bool | None:
        measurement = run(batch)
        probes.append((batch, measurement.status))
        if on_probe:
            on_probe(batch, measurement.status)
        if measurement.status == "ok":
            return True
        if measurement.status in ("oom", "timeout"):
            return False
        return None

    def stopped(batch: int) -> MaxBatch:
        return MaxBatch(None, None, tuple(probes), f"batch {batch} failed for a reason other than memory")

    if start is None:
        from perdollar.workload import load_workload

        start = load_workload(spec, precision=precision).batch_size
    batch = max(1, min(start, limit))
    first = fits(batch)
    if first is None:
        return stopped(batch)
    good, bad = (batch, None) if first else (None, batch)
    while good is None:  # shrink until something fits
        assert bad is not None
        if bad == 1:
            return MaxBatch(None, 1, tuple(probes), "even batch 1 does not fit")
        candidate = bad // 2
        result = fits(candidate)
        if result is None:
            return stopped(candidate)
        good, bad = (candidate, bad) if result else (None, candidate)
    while bad is None:  # grow until something does not fit
        if good >= limit:
            return MaxBatch(good, None, tuple(probes), f"every batch up to the limit {limit} fits")
        candidate = min(good * 2, limit)
        result = fits(candidate)
        if result is None:
            return stopped(candidate)
        good, bad = (candidate, None) if result else (good, candidate)
    while bad - good > 1:
        middle = (good + bad) // 2
        result = fits(middle)
        if result is None:
            return stopped(middle)
        good, bad = (middle, bad) if result else (good, middle)
    return MaxBatch(good, bad, tuple(probes))
