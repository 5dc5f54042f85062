"""Steady-state detection and summary statistics on synthetic step-time series."""

from __future__ import annotations

import random

import pytest

from perdollar.measure import steady
from perdollar.measure.loop import LoopSettings, run_loop


def _noisy(base: float, count: int, noise: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [base * (1 + rng.uniform(-noise, noise)) for _ in range(count)]


def test_stable_series_is_steady_from_the_start() -> None:
    assert steady.find_steady_start(_noisy(0.010, 60, 0.01, seed=1)) == 0


def test_noisy_warm_up_is_skipped() -> None:
    rng = random.Random(2)
    warm_up = [rng.uniform(0.05, 0.2) for _ in range(20)]
    series = warm_up + _noisy(0.010, 60, 0.01, seed=3)
    start = steady.find_steady_start(series)
    assert start is not None
    assert start == 20  # the first step at the steady speed


def test_drifting_series_never_settles() -> None:
    series = [0.010 * 1.03**i for i in range(80)]  # 3% slower every step
    assert steady.find_steady_start(series) is None


def test_slow_drift_is_flagged_across_blocks() -> None:
    block_rates = [1000 * (1 - 0.02 * i) for i in range(10)]
    warnings = steady.spread_warnings(block_rates, _noisy(0.01, 50, 0.01, seed=4))
    assert any("falling" in warning for warning in warnings)


def test_bimodal_step_times_are_detected_and_warned() -> None:
    rng = random.Random(5)
    series = [rng.choice((0.010, 0.020)) * (1 + rng.uniform(-0.01, 0.01)) for _ in range(100)]
    assert steady.is_bimodal(series)
    summary = steady.summarize([100.0, 101.0, 99.0, 100.5], series)
    assert any("bimodal" in warning for warning in summary.warnings)


def test_a_few_outliers_are_not_bimodal() -> None:
    series = _noisy(0.010, 100, 0.01, seed=6)
    series[10] = series[50] = 0.05  # two GC pauses
    assert not steady.is_bimodal(series)


def test_median_interval_uses_order_statistics() -> None:
    assert steady.binomial_median_ranks(10) == (1, 8)
    assert steady.binomial_median_ranks(5) == (0, 4)  # too few blocks: the full range
    median, low, high = steady.median_interval([5.0, 1.0, 4.0, 2.0, 3.0, 9.0, 7.0, 6.0, 8.0, 10.0])
    assert (median, low, high) == (5.5, 2.0, 9.0)


def test_summary_reports_percentiles_cv_and_iqr() -> None:
    summary = steady.summarize([100.0, 102.0, 98.0, 101.0, 99.0, 100.0], [0.010, 0.011, 0.009, 0.010])
    assert summary.rate.low <= summary.rate.median <= summary.rate.high
    assert summary.rate.iqr > 0
    assert 0 < summary.cv < 0.05
    assert set(summary.step_time_ms) == {"p10", "p50", "p90", "p99", "mean"}
    assert summary.step_time_ms["p10"] <= summary.step_time_ms["p50"] <= summary.step_time_ms["p99"]
    assert summary.warnings == ()


def test_wide_spread_is_warned() -> None:
    warnings = steady.spread_warnings([100.0, 150.0, 60.0, 130.0, 80.0], [0.01] * 20)
    assert any("CV" in warning for warning in warnings)


class _ScriptedClock:
    """A clock that advances by a scripted step time whenever the fake step runs."""

    def __init__(self, step_times: list[float]) -> None:
        self.now = 0.0
        self._times = iter(step_times)

    def __call__(self) -> float:
        return self.now

    def step(self) -> None:
        self.now += next(self._times)


def test_loop_discards_warm_up_and_stops_when_tight() -> None:
    rng = random.Random(7)
    times = [rng.uniform(0.05, 0.3) for _ in range(15)] + _noisy(0.01, 100_000, 0.002, seed=8)
    clock = _ScriptedClock(times)
    result = run_loop(
        clock.step,
        samples_per_step=32,
        clock=clock,
        settings=LoopSettings(duration_s=60, target_precision=0.01, min_blocks=8),
    )
    assert result.steady_reached
    assert result.warmup_steps >= 15
    assert result.stop_reason == "tight"
    assert len(result.block_rates) >= 8
    summary = result.summary()
    assert summary.rate.median == pytest.approx(3200, rel=0.01)  # 32 samples per 10 ms


def test_loop_on_a_drifting_workload_stops_at_the_budget_and_warns() -> None:
    times = [0.01 * 1.002**i for i in range(100_000)]
    clock = _ScriptedClock(times)
    result = run_loop(
        clock.step,
        samples_per_step=1,
        clock=clock,
        settings=LoopSettings(duration_s=30, target_precision=0.001),
    )
    assert result.stop_reason == "duration"
    assert clock.now <= 30 * 1.05
    assert result.summary().warnings


def test_slow_steps_settle_after_a_handful_of_steps() -> None:
    times = [3.0, 2.0, *_noisy(1.0, 1000, 0.005, seed=9)]  # one-second steps after a slow start
    clock = _ScriptedClock(times)
    result = run_loop(clock.step, samples_per_step=8, clock=clock, settings=LoopSettings(duration_s=40))
    assert result.steady_reached
    assert result.warmup_steps <= 8
    assert result.summary().rate.median == pytest.approx(8, rel=0.02)


def test_a_slide_that_starts_after_warm_up_is_flagged() -> None:
    calm = _noisy(0.01, 15, 0.005, seed=10)
    sliding = [0.01 * 1.003**i for i in range(1, 5000)]
    clock = _ScriptedClock([0.05, 0.05, 0.05, *calm, *sliding])
    result = run_loop(
        clock.step, samples_per_step=1, clock=clock, settings=LoopSettings(duration_s=10, warmup_share=0.1)
    )
    assert result.steady_reached  # the calm start looked steady…
    assert any("falling" in warning for warning in result.summary().warnings)  # …the blocks tell
