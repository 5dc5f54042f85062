"""Which candidate to measure next: value of information per benchmark dollar.

Beliefs live in log samples-per-dollar space: a prediction of 1,000 samples/$ with a band of
800 … 1,250 is a normal belief centred on log(1,000) whose width comes from the band. Working in
logs makes "improvement" relative (a 5% gain is worth the same on a cheap GPU and a dear one) and
keeps beliefs positive in samples/$.

The value of measuring candidate *i* is how much the choice is expected to improve once *i*'s
figure is known (the expected improvement of CherryPick, in its knowledge-gradient form):
``E[max(X_i, τ_i)] − max(μ_i, τ_i)`` where ``τ_i`` is the best point estimate among the others.
It is positive for a challenger that may overtake the leader and for a leader that may fall
below the runner-up, and near zero for a candidate far from the top or already well known.
Divided by the candidate's benchmark cost it says where the next dollar of measuring goes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# The prediction bands are read as central 90% intervals (±1.645 σ) unless a caller says otherwise.
BAND_Z = 1.645
DEFAULT_CONFIDENCE = 0.9
_MONTE_CARLO_DRAWS = 4000
_MEASURED_SIGMA = 0.02  # a measured figure still varies a little between nodes and runs


@dataclass(frozen=True, slots=True)
class Belief:
    """What is known about one candidate's samples per dollar."""

    key: str
    mean_log: float  # log samples/$
    sigma_log: float  # σ of log samples/$
    run_cost_usd: float  # what one benchmark of this candidate costs (cap)
    measured: bool = False

    @property
    def samples_per_dollar(self) -> float:
        return math.exp(self.mean_log)


@dataclass(frozen=True, slots=True)
class Pick:
    key: str
    value_of_information: float  # expected relative gain in samples/$ of the final choice
    value_per_dollar: float
    p_change: float  # chance that measuring it changes the top choice


def belief_from_band(
    key: str,
    value: float,
    low: float | None,
    high: float | None,
    run_cost_usd: float,
    *,
    measured: bool = False,
    band_z: float = BAND_Z,
) -> Belief:
    """A belief from a point estimate and its band (samples/$, or anything proportional)."""
    if value <= 0 or not math.isfinite(value):
        raise ValueError(f"samples per dollar must be positive, got {value!r}")
    if measured:
        sigma = _MEASURED_SIGMA
    elif low and high and low > 0 and high > low:
        sigma = (math.log(high) - math.log(low)) / (2 * band_z)
    else:
        sigma = 0.25  # no band: roughly the error of a spec-only prediction
    return Belief(key, math.log(value), max(sigma, 1e-6), max(run_cost_usd, 1e-9), measured)


def _phi(z: float) -> float:
    return math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)


def _cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2))


def expected_improvement(mean: float, sigma: float, threshold: float) -> float:
    """``E[max(X − threshold, 0)]`` for ``X ~ N(mean, sigma²)``."""
    if sigma <= 0:
        return max(mean - threshold, 0.0)
    z = (mean - threshold) / sigma
    return (mean - threshold) * _cdf(z) + sigma * _phi(z)


def leader(beliefs: Sequence[Belief]) -> int:
    return max(range(len(beliefs)), key=lambda i: beliefs[i].mean_log)


def value_of_measuring(beliefs: Sequence[Belief], index: int) -> float:
    """Expected gain (in log samples/$) of the final choice from measuring ``beliefs[index]``."""
    others = [b.mean_log for j, b in enumerate(beliefs) if j != index]
    if not others:
        return 0.0
    belief = beliefs[index]
    threshold = max(others)
    return (
        expected_improvement(belief.mean_log, belief.sigma_log, threshold)
        + threshold
        - max(belief.mean_log, threshold)
    )


def chance_of_changing_top(beliefs: Sequence[Belief], index: int) -> float:
    """P(the top choice changes once ``beliefs[index]`` is measured)."""
    if len(beliefs) < 2:
        return 0.0
    top = leader(beliefs)
    belief = beliefs[index]
    if index == top:
        runner_up = max(b.mean_log for j, b in enumerate(beliefs) if j != index)
        return _cdf((runner_up - belief.mean_log) / belief.sigma_log)
    return 1.0 - _cdf((beliefs[top].mean_log - belief.mean_log) / belief.sigma_log)


def rank_picks(beliefs: Sequence[Belief], exclude: set[str] | frozenset[str] = frozenset()) -> list[Pick]:
    """Unmeasured candidates, best value of information per benchmark dollar first."""
    picks = []
    for i, belief in enumerate(beliefs):
        if belief.measured or belief.key in exclude:
            continue
        value = value_of_measuring(beliefs, i)
        picks.append(Pick(belief.key, value, value / belief.run_cost_usd, chance_of_changing_top(beliefs, i)))
    return sorted(picks, key=lambda p: (-p.value_per_dollar, -p.p_change, p.key))


def top_k_order(beliefs: Sequence[Belief], exclude: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The plain strategy: unmeasured candidates in order of predicted samples/$."""
    ranked = sorted(beliefs, key=lambda b: (-b.mean_log, b.key))
    return [b.key for b in ranked if not b.measured and b.key not in exclude]


def p_top_is_best(beliefs: Sequence[Belief], *, draws: int = _MONTE_CARLO_DRAWS, seed: int = 0) -> float:
    """Probability that the current leader really has the highest samples/$ (Monte Carlo)."""
    if len(beliefs) < 2:
        return 1.0
    rng = np.random.default_rng(seed)
    means = np.array([b.mean_log for b in beliefs])
    sigmas = np.array([b.sigma_log for b in beliefs])
    samples = means + sigmas * rng.standard_normal((draws, len(beliefs)))
    return float(np.mean(np.argmax(samples, axis=1) == leader(beliefs)))


def stop_reason(
    beliefs: Sequence[Belief],
    *,
    confidence: float,
    spent_usd: float,
    budget_usd: float | None,
    runs: int,
    max_runs: int | None,
    exclude: set[str] | frozenset[str] = frozenset(),
) -> str:
    """Why a sweep should stop now, or "" to go on."""
    remaining = [b for b in beliefs if not b.measured and b.key not in exclude]
    if not remaining:
        return "every candidate has been measured"
    if max_runs is not None and runs >= max_runs:
        return f"reached {max_runs} benchmark runs"
    if budget_usd is not None and spent_usd + min(b.run_cost_usd for b in remaining) > budget_usd:
        return f"the next run would exceed the ${budget_usd:g} budget"
    p_stable = p_top_is_best(beliefs)
    if runs > 0 and p_stable >= confidence:
        return f"the top choice is stable: P(best) = {p_stable:.0%} ≥ {confidence:.0%}"
    return ""
