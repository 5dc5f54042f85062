"""A command that prints throughput lines by the million: bounded memory, a summary that ends,
and a median interval that is the same order statistic the exact binomial gives."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import pytest

from cli_runner import run_perdollar
from perdollar.measure import command, steady


def _exact_lower_rank(count: int, confidence: float = 0.95) -> int:
    """The textbook definition, in exact rationals: the largest k with P(X <= k-1) <= alpha."""
    alpha = Fraction(1 - confidence) / 2
    cumulative = Fraction(0)
    for k in range(count + 1):
        cumulative += Fraction(math.comb(count, k), 2**count)
        if cumulative > alpha:
            return max(k - 1, 0)
    raise AssertionError("unreachable")


@pytest.mark.parametrize("count", [1, 2, 5, 6, 9, 17, 50, 101, 400, 999, 2000])
def test_median_ranks_agree_with_the_exact_binomial(count: int) -> None:
    lower = _exact_lower_rank(count)
    assert steady.binomial_median_ranks(count) == (lower, count - 1 - lower)


def test_median_ranks_of_a_million_follow_the_normal_limit() -> None:
    # For large n the lower rank is n/2 - 1.96 * sqrt(n)/2 to within a couple of ranks.
    lower, upper = steady.binomial_median_ranks(10**6)
    assert abs(lower - (500_000 - 980)) <= 2
    assert upper == 10**6 - 1 - lower


def test_capture_keeps_bounded_evenly_spread_readings() -> None:
    capture = command._Capture([], [])
    total = 10 * command.MAX_READINGS + 3
    for index in range(total):
        capture.add(float(index))
    assert capture.seen == total
    assert command.MAX_READINGS // 2 <= len(capture.readings) < command.MAX_READINGS
    assert capture.readings[0] == 0.0 and capture.readings[-1] > 0.99 * total
    gaps = {b - a for a, b in zip(capture.readings, capture.readings[1:], strict=False)}
    assert gaps == {float(capture.stride)}  # one stride throughout: evenly spread


def test_a_command_printing_as_fast_as_it_can_is_measured_and_ends() -> None:
    # Long enough that even a loaded 2-core machine reads more lines than the cap keeps.
    completed = run_perdollar(
        "bench", "--json", "--no-store", "--duration", "8", "--", "yes", "7 samples/second", timeout=240
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    document = json.loads(completed.stdout)
    assert document["samples_per_second"]["median"] == 7.0
    extra = document["extra"]
    assert extra["readings_seen"] > command.MAX_READINGS
    assert len(extra["readings"]) == command.MAX_STORED_READINGS
