"""Spot algebra: interruption hazard, checkpoint interval, expected time and P(deadline).

The model, for a job of ``W`` hours of uninterrupted work on ``N`` nodes:

* **Hazard.** AWS's Spot Advisor publishes, per instance type and region, the fraction of
  instances interrupted over the trailing month as a bucket (``<5%`` … ``>20%``). A monthly
  fraction ``f`` becomes a constant hourly hazard ``λ = −ln(1 − f) / 730`` (the rate of an
  exponential clock that interrupts a fraction ``f`` of instances within 730 hours). The bucket's
  midpoint gives the central value, its edges the band. GCP and Azure publish nothing, so they
  get a documented default (15 %/month, band 5–50 %) that ``--interruption-rate`` overrides.
* **N-node stall.** Data-parallel training stops when any node goes: the job's hazard is
  ``Λ = N·λ`` and its mean time between interruptions ``M = 1/Λ``.
* **Checkpoint interval.** Young/Daly: ``τ = √(2·C·M)`` for checkpoint write time ``C``
  (capped at the job's length: a job shorter than τ needs no intermediate checkpoint).
* **Expected time.** The job is ``W/τ`` segments of ``τ`` work plus ``C`` writing. With
  exponential interruptions and a restart of ``R`` hours after each one (no interruption while
  restarting), one segment of length ``x = τ + C`` takes, in expectation,
  ``(1/Λ + R)·(e^{Λx} − 1)`` hours — the classical result for restartable work, which already
  counts the work lost since the last checkpoint. Its variance follows from the number of
  interruptions (geometric) and the time at which each one strikes (a truncated exponential).
* **P(deadline).** The number of interruptions is close to Poisson; with none the job takes its
  base time (work + checkpoints), with ``k`` it adds ``k`` losses (work since the last checkpoint +
  restart). :func:`deadline_probability` sums these terms in closed form (the throughput band
  makes the base time lognormal). :func:`simulate_completion_hours` is a seeded Monte Carlo of
  the same process; the tests check the closed form against it.

Cost is billed for all elapsed hours (work, checkpoints, lost work and restarts), which is
conservative: a node waiting for capacity is not billed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

HOURS_PER_MONTH = 730.0

# Spot Advisor bucket → (central, low, high) fraction of instances interrupted per month.
BUCKET_MONTHLY_FRACTION: dict[str, tuple[float, float, float]] = {
    "<5%": (0.025, 0.005, 0.05),
    "5-10%": (0.075, 0.05, 0.10),
    "10-15%": (0.125, 0.10, 0.15),
    "15-20%": (0.175, 0.15, 0.20),
    ">20%": (0.30, 0.20, 0.50),
}
# Clouds that publish no interruption data (GCP, Azure): a middle-of-the-road guess, wide band.
UNKNOWN_MONTHLY_FRACTION: tuple[float, float, float] = (0.15, 0.05, 0.50)

# Checkpoint writes: weights + optimizer state streamed to network storage (an EBS gp3 volume
# gives 125–1000 MB/s; object storage from one node a few hundred MB/s), plus serialisation.
DEFAULT_CHECKPOINT_BANDWIDTH_BYTES_PER_S = 250e6
DEFAULT_CHECKPOINT_OVERHEAD_S = 5.0
# Restart after an interruption: a replacement node (a few minutes), container pull, process
# start, data-loader warm-up and checkpoint reload.
DEFAULT_RESTART_HOURS = 10.0 / 60.0

_SMALL_EXPONENT = 1e-6  # below this Λx the truncated exponential is a uniform on [0, x)
_MAX_EXPONENT = 700.0  # e^700 is near the float limit: the job effectively never finishes


def monthly_fraction_to_hazard(fraction: ArrayLike) -> FloatArray:
    """Per-hour hazard whose exponential clock interrupts ``fraction`` of instances in a month."""
    f = np.clip(np.asarray(fraction, dtype=np.float64), 0.0, 0.999999)
    return -np.log1p(-f) / HOURS_PER_MONTH


def bucket_fractions(
    buckets: ArrayLike, unknown: tuple[float, float, float] = UNKNOWN_MONTHLY_FRACTION
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Monthly interruption fraction (central, low, high) for each Spot Advisor bucket label."""
    labels = np.asarray(buckets, dtype=object)
    central = np.full(labels.shape, unknown[0])
    low = np.full(labels.shape, unknown[1])
    high = np.full(labels.shape, unknown[2])
    for label, (mid, lo, hi) in BUCKET_MONTHLY_FRACTION.items():
        mask = labels == label
        central[mask], low[mask], high[mask] = mid, lo, hi
    return central, low, high


def checkpoint_hours(
    state_bytes: float,
    *,
    bandwidth_bytes_per_s: float = DEFAULT_CHECKPOINT_BANDWIDTH_BYTES_PER_S,
    overhead_s: float = DEFAULT_CHECKPOINT_OVERHEAD_S,
) -> float:
    """Time to write one checkpoint of ``state_bytes`` (weights + optimizer state), in hours."""
    return (overhead_s + state_bytes / bandwidth_bytes_per_s) / 3600.0


def young_daly_interval_hours(checkpoint_h: ArrayLike, mtbf_hours: ArrayLike) -> FloatArray:
    """Young/Daly optimal work between checkpoints: ``√(2·C·M)`` (inf when nothing interrupts)."""
    return np.sqrt(
        2.0 * np.asarray(checkpoint_h, dtype=np.float64) * np.asarray(mtbf_hours, dtype=np.float64)
    )


def truncated_exponential_moments(
    length_hours: FloatArray, hazard: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Mean and variance of when an interruption strikes, given that it strikes within ``x``."""
    x, rate = np.broadcast_arrays(
        np.asarray(length_hours, dtype=np.float64), np.asarray(hazard, dtype=np.float64)
    )
    with np.errstate(invalid="ignore"):
        # 0 × inf (no hazard, no target) counts as "nothing strikes".
        exponent = np.minimum(np.nan_to_num(rate * x, nan=0.0), _MAX_EXPONENT)
    small = exponent < _SMALL_EXPONENT
    safe_rate = np.where(small, 1.0, rate)
    survival = np.exp(-exponent)
    safe_struck = np.where(small, 1.0, -np.expm1(-exponent))  # 1 − e^{−Λx}
    with np.errstate(invalid="ignore", over="ignore"):
        mean = np.where(small, x / 2.0, 1.0 / safe_rate - x * survival / safe_struck)
        second = np.where(
            small,
            x * x / 3.0,
            (2.0 / safe_rate**2 - survival * (x * x + 2.0 * x / safe_rate + 2.0 / safe_rate**2))
            / safe_struck,
        )
    with np.errstate(invalid="ignore"):
        return mean, np.maximum(second - mean**2, 0.0)


def segment_moments(
    length_hours: ArrayLike, hazard: ArrayLike, restart_hours: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Mean and variance of the wall time to finish ``length_hours`` of restartable work.

    Interruptions arrive at rate ``hazard``; each one loses the segment's progress and costs
    ``restart_hours``. The number of interruptions ``K`` is geometric with success probability
    ``p = e^{−Λx}``; each one strikes at a time ``Y`` drawn from the exponential truncated to
    ``[0, x)``: ``T = x + Σ_K (Y + R)``.
    """
    x, rate, restart = np.broadcast_arrays(
        np.asarray(length_hours, dtype=np.float64),
        np.asarray(hazard, dtype=np.float64),
        np.asarray(restart_hours, dtype=np.float64),
    )
    with np.errstate(invalid="ignore"):
        # 0 × inf (no hazard, no target) counts as "nothing strikes".
        exponent = np.minimum(np.nan_to_num(rate * x, nan=0.0), _MAX_EXPONENT)
    interruptions_mean = np.expm1(exponent)  # E[K] = (1 − p)/p
    interruptions_var = interruptions_mean * np.exp(exponent)  # Var[K] = (1 − p)/p²
    y_mean, y_var = truncated_exponential_moments(x, rate)
    with np.errstate(invalid="ignore"):
        mean = x + interruptions_mean * (y_mean + restart)
        variance = interruptions_mean * y_var + interruptions_var * (y_mean + restart) ** 2
    never = exponent >= _MAX_EXPONENT
    return np.where(never, np.inf, mean), np.where(never, np.inf, variance)


@dataclass(frozen=True, slots=True)
class SpotOutcome:
    """Expected wall time of a job under interruptions (arrays, one entry per candidate)."""

    expected_hours: FloatArray
    sd_hours: FloatArray
    interval_hours: FloatArray  # work between checkpoints (Young/Daly, capped at the job)
    overhead: FloatArray  # expected wall time / uninterrupted work time (≥ 1)
    job_hazard_per_hour: FloatArray  # N × the per-node hazard
    base_hours: FloatArray  # work plus checkpoint writes, with no interruption at all
    expected_interruptions: FloatArray
    loss_mean_hours: FloatArray  # lost work + restart, per interruption
    loss_var_hours2: FloatArray
    # Work lost to one interruption, on average: the time since the last checkpoint.
    lost_work_hours: FloatArray
    # Young/Daly's interval before the cap: what the interruption rate alone asks for.
    young_daly_hours: FloatArray
    # The job is shorter than one interval: only the final checkpoint is written.
    final_checkpoint_only: NDArray[np.bool_]


def spot_outcome(
    work_hours: ArrayLike,
    hazard_per_node: ArrayLike,
    nodes: ArrayLike,
    checkpoint_h: ArrayLike,
    restart_hours: ArrayLike,
) -> SpotOutcome:
    """Expected time of ``work_hours`` of work on ``nodes`` spot nodes.

    ``work_hours`` may be inf (no target given): the overhead is then the long-run ratio of
    one checkpoint segment, which is what a samples-per-dollar ranking needs.
    """
    job_hazard = np.asarray(hazard_per_node, dtype=np.float64) * np.asarray(nodes, dtype=np.float64)
    work, job_hazard, checkpoint, restart = np.broadcast_arrays(
        np.asarray(work_hours, dtype=np.float64),
        job_hazard,
        np.asarray(checkpoint_h, dtype=np.float64),
        np.asarray(restart_hours, dtype=np.float64),
    )

    with np.errstate(divide="ignore"):
        mtbf = np.where(job_hazard > 0, 1.0 / np.where(job_hazard > 0, job_hazard, 1.0), np.inf)
    optimal = young_daly_interval_hours(checkpoint, mtbf)
    finite_work = np.isfinite(work)
    interval = np.where(finite_work, np.minimum(optimal, work), optimal)
    # A job shorter than one interval writes no intermediate checkpoint.
    single = finite_work & (optimal >= work)
    segment_length = np.where(single, work, interval + checkpoint)
    seg_mean, seg_var = segment_moments(segment_length, job_hazard, restart)
    strike_mean, strike_var = truncated_exponential_moments(segment_length, job_hazard)

    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        segments = np.where(single, 1.0, np.where(interval > 0, work / interval, np.inf))
        expected = np.where(finite_work, segments * seg_mean, np.inf)
        sd = np.where(finite_work, np.sqrt(segments * seg_var), np.inf)
        overhead_long_run = np.where(np.isfinite(interval) & (interval > 0), seg_mean / interval, 1.0)
        overhead = np.where(
            finite_work & (work > 0), expected / np.where(work > 0, work, 1.0), overhead_long_run
        )
        base = np.where(finite_work, segments * segment_length, np.inf)
        interruptions = segments * np.expm1(np.minimum(job_hazard * segment_length, _MAX_EXPONENT))
    # No hazard at all (an on-demand-like offer): no checkpoint is needed and nothing is lost.
    calm = job_hazard <= 0
    return SpotOutcome(
        expected_hours=np.where(calm, work, expected),
        sd_hours=np.where(calm, 0.0, sd),
        interval_hours=interval,
        overhead=np.where(calm, 1.0, overhead),
        job_hazard_per_hour=job_hazard,
        base_hours=np.where(calm, work, base),
        expected_interruptions=np.where(calm, 0.0, interruptions),
        loss_mean_hours=strike_mean + restart,
        loss_var_hours2=strike_var,
        lost_work_hours=np.where(calm, 0.0, strike_mean),
        young_daly_hours=optimal,
        final_checkpoint_only=single & ~calm,
    )


def normal_cdf(z: ArrayLike) -> FloatArray:
    """Φ(z), vectorised: Abramowitz & Stegun 7.1.26 for erf (absolute error < 1.5e-7)."""
    values = np.asarray(z, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        x = np.abs(values) / math.sqrt(2.0)
        t = 1.0 / (1.0 + 0.3275911 * x)
        poly = t * (
            0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
        )
        erf = 1.0 - poly * np.exp(-x * x)
        result = 0.5 * (1.0 + np.sign(values) * erf)
    return np.where(np.isnan(values), np.nan, result)


_MAX_TERMS = 40  # Poisson terms summed exactly; beyond that the total is normal anyway
_TAIL = 1e-9  # Poisson mass left out when the sum stops early


def _lognormal_cdf(x: float, mean: FloatArray, variance: FloatArray) -> FloatArray:
    """P(T ≤ x) for a lognormal T with this mean and variance (a point mass when variance is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.sqrt(np.log1p(variance / mean**2))
        z = (np.log(x / mean) + spread**2 / 2) / spread
        return np.where(spread > 0, normal_cdf(z), (mean <= x).astype(np.float64))


def deadline_probability(
    outcome: SpotOutcome, deadline_hours: float, throughput_log_sd: ArrayLike = 0.0
) -> FloatArray:
    """P(finish within ``deadline_hours``): a compound-Poisson closed form.

    With ``K`` interruptions (Poisson, mean ``E[K]``), the job takes ``base + Σ_K (Y + R)``.
    ``K = 0`` is the common case for a short job on a quiet market and is handled exactly; for
    ``K ≥ 1`` the total is taken as lognormal with the right mean and variance.
    ``throughput_log_sd`` is the log-scale uncertainty of the throughput (from the prediction
    band): the no-interruption time is lognormal.
    """
    shape = np.shape(outcome.base_hours)
    base = np.atleast_1d(np.asarray(outcome.base_hours, dtype=np.float64)).ravel()
    log_sd = np.broadcast_to(np.asarray(throughput_log_sd, dtype=np.float64), shape).ravel()
    expected_k = np.broadcast_to(np.asarray(outcome.expected_interruptions, dtype=np.float64), shape).ravel()
    loss_mean_all = np.broadcast_to(np.asarray(outcome.loss_mean_hours, dtype=np.float64), shape).ravel()
    loss_var_all = np.broadcast_to(np.asarray(outcome.loss_var_hours2, dtype=np.float64), shape).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        log_margin = np.log(deadline_hours / base)
        z0 = np.where(
            log_sd > 0,
            log_margin / np.where(log_sd > 0, log_sd, 1.0),
            np.where(base <= deadline_hours, np.inf, -np.inf),
        )
        base_var = np.nan_to_num((base * log_sd) ** 2, nan=0.0)
    probability = np.exp(-expected_k) * normal_cdf(z0)

    # Terms k ≥ 1 only where interruptions are expected at all (spot rows), and only as many
    # as the largest expected count needs.
    busy = expected_k > _MAX_TERMS / 2
    rows = np.flatnonzero((expected_k > 0) & ~busy & np.isfinite(base))
    if rows.size:
        mean_k = expected_k[rows]
        loss_mean = loss_mean_all[rows]
        loss_var = loss_var_all[rows]
        term_weight = np.exp(-mean_k)
        covered = term_weight.copy()
        added = np.zeros(rows.size)
        for k in range(1, _MAX_TERMS + 1):
            term_weight = term_weight * mean_k / k
            covered += term_weight
            added += term_weight * _lognormal_cdf(
                deadline_hours, base[rows] + k * loss_mean, k * loss_var + base_var[rows]
            )
            if (1.0 - covered).max() < _TAIL:
                break
        probability[rows] += added
    # Many interruptions: the total is a sum of many segments, normal by the central limit.
    if busy.any():
        sd = np.broadcast_to(np.asarray(outcome.sd_hours, dtype=np.float64), shape).ravel()
        expected = np.broadcast_to(np.asarray(outcome.expected_hours, dtype=np.float64), shape).ravel()
        with np.errstate(divide="ignore", invalid="ignore"):
            # Lognormal with the same mean and spread: a time cannot go below zero.
            log_spread = np.sqrt(np.log1p((sd / expected) ** 2) + log_sd**2)
            z = np.log(deadline_hours / expected) / log_spread
        probability = np.where(busy, normal_cdf(z), probability)
    probability = np.where(np.isfinite(base), probability, 0.0)
    return np.clip(probability, 0.0, 1.0).reshape(shape)


def simulate_completion_hours(
    work_hours: float,
    hazard_per_node: float,
    nodes: int,
    checkpoint_h: float,
    restart_hours: float,
    *,
    draws: int = 2000,
    seed: int = 0,
) -> FloatArray:
    """Seeded Monte Carlo of the same process: ``draws`` completion times in hours."""
    rng = np.random.default_rng(seed)
    job_hazard = hazard_per_node * nodes
    if job_hazard <= 0:
        return np.full(draws, float(work_hours))
    interval = min(math.sqrt(2.0 * checkpoint_h / job_hazard), work_hours)
    if interval >= work_hours:
        lengths = np.array([work_hours])
    else:
        full = int(work_hours // interval)
        rest = work_hours - full * interval
        lengths = np.full(full, interval + checkpoint_h)
        if rest > 1e-12:
            lengths = np.append(lengths, rest + checkpoint_h)
    survival = np.exp(-job_hazard * lengths)
    failures = rng.geometric(survival, size=(draws, lengths.size)) - 1  # interruptions per segment
    total = np.full(draws, lengths.sum())
    counts = failures.sum(axis=1)
    if counts.sum():
        # Time into the segment at which each interruption struck: truncated exponential.
        per_failure_length = np.repeat(np.tile(lengths, draws), failures.ravel())
        uniform = rng.random(per_failure_length.size)
        strike = -np.log1p(-uniform * -np.expm1(-job_hazard * per_failure_length)) / job_hazard
        owner = np.repeat(np.arange(draws), counts)
        total += np.bincount(owner, weights=strike + restart_hours, minlength=draws)
    return total
