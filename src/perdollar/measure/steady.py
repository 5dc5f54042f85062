"""Steady state from step times: when warm-up ends, how tight a rate is, and when to distrust it.

Pure functions over plain sequences of seconds, so the statistics can be tested on synthetic
series without running anything. The harness loop in :mod:`perdollar.measure.loop` feeds them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perdollar.measure.result import Rate

# Two consecutive windows whose medians differ by less than this are "the same speed".
DEFAULT_TOLERANCE = 0.05
# A spread (coefficient of variation of block rates) above this is worth a warning.
SUSPECT_CV = 0.05


@dataclass(frozen=True, slots=True)
class SteadySummary:
    """What a run of timed blocks says about the workload's speed."""

    rate: Rate  # samples per second
    cv: float  # coefficient of variation of the block rates
    step_time_ms: dict[str, float]
    warnings: tuple[str, ...]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def find_steady_start(
    step_times: Sequence[float], *, window: int = 5, tolerance: float = DEFAULT_TOLERANCE
) -> int | None:
    """Index of the first step of the steady state, or None while it has not been reached.

    Steady means three consecutive windows whose medians agree within ``tolerance`` of each
    other: one comparison could agree by chance while the speed is still sliding (a drift moves
    every window the same way, so three in a row catch it), and medians shrug off single
    outliers such as a garbage-collection pause. Warm-up steps that the first window's median
    outvoted are then skipped, so the steady state starts at the first step at the steady speed.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    for start in range(0, len(step_times) - 3 * window + 1):
        medians = [_median(step_times[start + k * window : start + (k + 1) * window]) for k in range(3)]
        low, high = min(medians), max(medians)
        if low > 0 and (high - low) / low <= tolerance:
            speed = _median(medians)
            first = start
            while first < start + window and abs(step_times[first] - speed) > tolerance * speed:
                first += 1
            return first
    return None


def binomial_median_ranks(count: int, confidence: float = 0.95) -> tuple[int, int]:
    """0-based ranks (lo, hi) in sorted data bracketing the median with ``confidence``.

    Distribution-free: the number of samples below the true median is Binomial(n, 1/2), so the
    interval needs no assumption about the shape of the block rates (which are often skewed by
    the odd slow block). The binomial tail is summed in floating point from eight standard
    deviations below the middle (the mass left out there is under 1e-15), so a million
    readings cost a few thousand steps, where exact integer binomials grew with n squared.
    """
    if count < 1:
        raise ValueError("need at least one value")
    alpha = (1 - confidence) / 2
    k = max(0, math.floor(count / 2 - 4 * math.sqrt(count)))
    probability = math.exp(
        math.lgamma(count + 1) - math.lgamma(k + 1) - math.lgamma(count - k + 1) - count * math.log(2)
    )
    cumulative = 0.0
    lower = 0
    while k <= count:
        cumulative += probability
        if cumulative > alpha:
            lower = max(k - 1, 0)
            break
        probability *= (count - k) / (k + 1)
        k += 1
    upper = count - 1 - lower
    return lower, upper


def median_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high) with a distribution-free confidence interval on the median."""
    return _median_interval_of_sorted(sorted(values), confidence)


def _median_interval_of_sorted(ordered: Sequence[float], confidence: float) -> tuple[float, float, float]:
    lower, upper = binomial_median_ranks(len(ordered), confidence)
    count = len(ordered)
    middle = (ordered[(count - 1) // 2] + ordered[count // 2]) / 2
    return middle, ordered[lower], ordered[upper]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile, ``q`` in [0, 100]."""
    return _percentile_of_sorted(sorted(values), q)


def _percentile_of_sorted(ordered: Sequence[float], q: float) -> float:
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def coefficient_of_variation(values: Sequence[float]) -> float:
    if len(values) < 2:
        return float("nan")
    # Floating-point sums: statistics.stdev's exact fractions cost seconds at a million readings.
    mean = math.fsum(values) / len(values)
    if not mean:
        return float("nan")
    variance = math.fsum((value - mean) ** 2 for value in values) / (len(values) - 1)
    return math.sqrt(variance) / mean


def step_time_percentiles_ms(step_times: Sequence[float]) -> dict[str, float]:
    if not step_times:
        return {}
    figures = {f"p{q}": percentile(step_times, q) * 1e3 for q in (10, 50, 90, 99)}
    figures["mean"] = statistics.fmean(step_times) * 1e3
    return figures


def is_bimodal(step_times: Sequence[float], *, min_share: float = 0.1, min_gap: float = 0.2) -> bool:
    """True when the step times fall into two separated groups (e.g. every other step syncs).

    Looks for the widest gap between neighbouring sorted values: bimodal when that gap is large
    against the median and each side holds a real share of the steps, so a handful of outliers
    does not count.
    """
    count = len(step_times)
    if count < 10:
        return False
    ordered = sorted(step_times)
    middle = _median(ordered)
    if middle <= 0:
        return False
    first = max(int(count * min_share), 1)
    gaps = [(ordered[i] - ordered[i - 1], i) for i in range(first, count - first + 1)]
    if not gaps:
        return False
    widest, index = max(gaps)
    return widest / middle >= min_gap and min(index, count - index) >= count * min_share


def trend_per_block(values: Sequence[float]) -> float:
    """Least-squares slope of ``values`` against their index, relative to their mean."""
    count = len(values)
    if count < 3:
        return 0.0
    mean_x = (count - 1) / 2
    mean_y = math.fsum(values) / count
    sxx = count * (count * count - 1) / 12  # the sum of (i - mean_x)^2 over 0..count-1
    sxy = math.fsum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    return (sxy / sxx) / mean_y if mean_y else 0.0


def spread_warnings(
    block_rates: Sequence[float],
    step_times: Sequence[float],
    *,
    steady_reached: bool = True,
    cv: float | None = None,
) -> tuple[str, ...]:
    """Plain-language reasons to distrust a figure; empty when it looks sound."""
    warnings: list[str] = []
    if not steady_reached:
        warnings.append("step times never settled during warm-up; the figure may still include warm-up")
    if len(block_rates) < 3:
        warnings.append(f"only {len(block_rates)} timed block(s); give it a longer --duration")
    if cv is None:
        cv = coefficient_of_variation(block_rates)
    if math.isfinite(cv) and cv > SUSPECT_CV:
        warnings.append(
            f"block rates vary by {cv:.0%} (CV); another process may be competing for the machine"
        )
    slope = trend_per_block(block_rates)
    if len(block_rates) >= 5 and abs(slope) * len(block_rates) > 2 * DEFAULT_TOLERANCE:
        direction = "rising" if slope > 0 else "falling"
        warnings.append(
            f"throughput kept {direction} across blocks ({slope:+.1%} per block): thermal throttling, "
            "caching or contention; the median is not a steady figure"
        )
    if is_bimodal(step_times):
        warnings.append("step times are bimodal (two distinct speeds); the median hides the slower steps")
    return tuple(warnings)


def summarize(
    block_rates: Sequence[float],
    step_times: Sequence[float],
    *,
    steady_reached: bool = True,
    confidence: float = 0.95,
) -> SteadySummary:
    """Median samples/s with IQR and a confidence interval, step-time percentiles and warnings."""
    if not block_rates:
        raise ValueError("no timed blocks to summarise")
    ordered = sorted(block_rates)  # once: every order statistic below reads it
    median, low, high = _median_interval_of_sorted(ordered, confidence)
    iqr = _percentile_of_sorted(ordered, 75) - _percentile_of_sorted(ordered, 25)
    cv = coefficient_of_variation(block_rates)
    return SteadySummary(
        rate=Rate(median=median, low=low, high=high, iqr=iqr),
        cv=cv,
        step_time_ms=step_time_percentiles_ms(step_times),
        warnings=spread_warnings(block_rates, step_times, steady_reached=steady_reached, cv=cv),
    )


def is_tight(
    block_rates: Sequence[float], *, target: float, min_blocks: int, confidence: float = 0.95
) -> bool:
    """Enough blocks, and the confidence interval's half-width within ``target`` of the median."""
    if len(block_rates) < min_blocks:
        return False
    median, low, high = median_interval(block_rates, confidence)
    return median > 0 and (high - low) / (2 * median) <= target
