"""Queueing algebra of one model-server replica with dynamic batching (closed form).

The decision path uses a closed form, not a simulation, so that it can be evaluated for every
candidate × batch size × replica count at once with numpy. The model:

* Requests reach one replica as a Poisson stream at ``rate`` (requests/s).
* The replica groups them into batches of up to ``max_batch`` requests. A batch closes when it is
  full or when its first request has waited ``max_wait_s``, so it holds
  ``k = min(max_batch, 1 + rate · max_wait_s)`` requests. Its first request waits for ``k − 1``
  more arrivals: an Erlang time, whose quantile (Wilson–Hilferty) is capped at ``max_wait_s``.
* A batch of ``k`` takes a deterministic service time ``s(k)``; closed batches queue for the
  accelerator with utilisation ``ρ = rate · s(k) / k``. The queue wait is that of **M/D/1**
  scaled by Kingman's factor for the batch arrivals' squared coefficient of variation ``1/k``
  (batches formed by filling arrive as an Erlang-k stream, more regular than Poisson).
* M/D/1 wait tail: for M/G/1, ``P(wait > t) ≈ C·exp(−θ t)`` where θ is the Cramér–Lundberg decay
  rate, the positive root of ``λ_b (E[e^{θS}] − 1) = θ``. With deterministic service this reduces to
  ``ρ (e^x − 1) = x`` for ``x = θ s`` — a function of ρ alone — and
  ``C = (1 − ρ) / (ρ e^x − 1)`` (the exact asymptotic constant). Since P(wait > 0) = ρ exactly,
  the wait at quantile q is zero whenever ρ ≤ 1 − q.
* A latency quantile is ``fill_q + wait_q + s(k)``: quantiles added, an upper bound on the
  quantile of the sum, on the safe side. The mean is ``(k − 1)/(2·rate) + wait_mean + s(k)``
  (Pollaczek–Khinchine for the queue; a request of a batch waits half the fill on average).

Against the seeded simulation below, the P99 comes out 0–45 % high (never low in the tested
cases) and the mean within a few per cent.

:func:`simulate_dynamic_batching` is a seeded discrete-event simulation of the same server (the
batch waits only while the accelerator is idle) used to check the closed form; it is not used to
make decisions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]

_NEWTON_STEPS = 60


def md1_decay_exponent(utilisation: ArrayLike) -> FloatArray:
    """x = θ·s > 0 solving ρ (e^x − 1) = x, elementwise; NaN where ρ ≥ 1 or ρ ≤ 0.

    Newton's method from a point right of the root converges monotonically because the left
    side minus the right is convex and increasing there. The start ``min(u, ln(1 + u/ρ))`` with
    ``u = 2(1 − ρ)/ρ`` (the heavy-traffic root) is always at or right of the root.
    """
    rho = np.asarray(utilisation, dtype=np.float64)
    valid = (rho > 0) & (rho < 1)
    r = np.where(valid, rho, 0.5)
    heavy_traffic = 2.0 * (1.0 - r) / r
    x = np.minimum(heavy_traffic, np.log1p(heavy_traffic / r))
    for _ in range(_NEWTON_STEPS):
        grow = np.exp(x)
        slope = r * grow - 1.0
        step = np.where(slope > 0, (r * (grow - 1.0) - x) / np.where(slope > 0, slope, 1.0), 0.0)
        x = x - step
    return np.where(valid, x, np.nan)


def md1_wait_quantile(utilisation: ArrayLike, service_s: ArrayLike, quantile: float) -> FloatArray:
    """Seconds a batch waits in an M/D/1 queue at ``quantile`` (0 < q < 1); inf when ρ ≥ 1."""
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}")
    rho = np.asarray(utilisation, dtype=np.float64)
    service = np.asarray(service_s, dtype=np.float64)
    x = md1_decay_exponent(rho)
    with np.errstate(divide="ignore", invalid="ignore"):
        prefactor = (1.0 - rho) / (rho * np.exp(x) - 1.0)
        tail_wait = np.log(prefactor / (1.0 - quantile)) * service / x
    # P(wait > 0) = ρ exactly: a quantile above 1 − ρ of the requests never waits.
    wait = np.where((rho > 1.0 - quantile) & (prefactor > 1.0 - quantile), tail_wait, 0.0)
    wait = np.where(rho <= 0, 0.0, wait)
    return np.where(rho >= 1, np.inf, wait)


def md1_mean_wait(utilisation: ArrayLike, service_s: ArrayLike) -> FloatArray:
    """Pollaczek–Khinchine mean wait of M/D/1: ρ s / (2 (1 − ρ)); inf when ρ ≥ 1."""
    rho = np.asarray(utilisation, dtype=np.float64)
    service = np.asarray(service_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        wait = rho * service / (2.0 * (1.0 - rho))
    return np.where(rho >= 1, np.inf, np.maximum(wait, 0.0))


def erlang_quantile(arrivals: ArrayLike, rate: ArrayLike, quantile: float) -> FloatArray:
    """Time until ``arrivals`` more Poisson arrivals at ``rate``, at ``quantile`` (Wilson–Hilferty).

    The Wilson–Hilferty cube-root normal approximation of the gamma quantile is within about 1%
    for the shapes used here (it is 4.61 against the exact 4.605 for one arrival at q = 0.99).
    """
    shape = np.asarray(arrivals, dtype=np.float64)
    z = NormalDist().inv_cdf(quantile)
    with np.errstate(divide="ignore", invalid="ignore"):
        cube = 1.0 - 1.0 / (9.0 * shape) + z / (3.0 * np.sqrt(shape))
        time = shape * np.maximum(cube, 0.0) ** 3 / np.asarray(rate, dtype=np.float64)
    return np.where(shape > 0, time, 0.0)


def effective_batch(rate: ArrayLike, max_batch: ArrayLike, max_wait_s: ArrayLike) -> FloatArray:
    """Requests per batch: full, or the first request plus those arriving within the max wait."""
    lam = np.asarray(rate, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        gathered = 1.0 + lam * np.asarray(max_wait_s, dtype=np.float64)
    return np.minimum(np.asarray(max_batch, dtype=np.float64), np.where(np.isnan(gathered), 1.0, gathered))


@dataclass(frozen=True)
class BatchingLatency:
    """Closed-form latency of one replica (arrays broadcast over the inputs)."""

    batch: FloatArray  # requests per batch actually formed
    fill_s: FloatArray  # wait of a batch's first request for the batch to close
    utilisation: FloatArray
    service_s: FloatArray  # s(batch)
    wait_quantile_s: FloatArray
    latency_quantile_s: FloatArray
    latency_mean_s: FloatArray

    @property
    def stable(self) -> NDArray[np.bool_]:
        return np.asarray(self.utilisation < 1.0)


def batching_latency(
    rate: ArrayLike,
    batch: ArrayLike,
    service_s: ArrayLike,
    quantile: float,
    max_wait_s: ArrayLike = np.inf,
) -> BatchingLatency:
    """Latency at ``quantile`` of a replica at ``rate`` req/s running batches of ``batch``.

    ``batch`` is the batch actually formed (see :func:`effective_batch`) and ``service_s`` its
    service time. Returns inf latencies where the replica cannot keep up (ρ ≥ 1).
    """
    lam = np.asarray(rate, dtype=np.float64)
    k = np.asarray(batch, dtype=np.float64)
    service = np.asarray(service_s, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        fill_mean = np.where(k > 1, (k - 1.0) / lam, 0.0)
        rho = lam * service / k
    fill_q = np.minimum(erlang_quantile(k - 1.0, lam, quantile), np.asarray(max_wait_s, dtype=np.float64))
    # Batches formed by filling arrive as an Erlang-k stream (squared CV 1/k); Kingman's
    # correction scales the Poisson-arrival (M/D/1) wait by that squared CV.
    arrival_cv2 = 1.0 / k
    wait_q = md1_wait_quantile(rho, service, quantile) * arrival_cv2
    mean_wait = md1_mean_wait(rho, service) * arrival_cv2
    latency_q = fill_q + wait_q + service
    latency_mean = fill_mean / 2.0 + mean_wait + service
    shape = latency_q.shape
    return BatchingLatency(
        batch=np.broadcast_to(k, shape).astype(np.float64),
        fill_s=np.broadcast_to(fill_q, shape).astype(np.float64),
        utilisation=np.broadcast_to(rho, shape).astype(np.float64),
        service_s=np.broadcast_to(service, shape).astype(np.float64),
        wait_quantile_s=np.broadcast_to(wait_q, shape).astype(np.float64),
        latency_quantile_s=latency_q,
        latency_mean_s=np.broadcast_to(latency_mean, shape).astype(np.float64),
    )


def simulate_dynamic_batching(
    rate: float,
    max_batch: int,
    max_wait_s: float,
    service_time: Callable[[int], float],
    *,
    requests: int = 20_000,
    seed: int = 0,
) -> np.ndarray:
    """Latencies (s) of ``requests`` Poisson arrivals through a dynamic-batching server.

    When the accelerator is free it takes up to ``max_batch`` waiting requests, waiting at most
    ``max_wait_s`` after the oldest one arrived for the batch to fill. Seeded and bounded by
    ``requests``: for checking the closed form, not for decisions.
    """
    if rate <= 0 or max_batch < 1 or requests < 1:
        raise ValueError("rate, max_batch and requests must be positive")
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate, size=requests))
    latencies = np.empty(requests)
    free_at = 0.0
    head = 0
    while head < requests:
        oldest = arrivals[head]
        start = max(free_at, oldest)
        # The batch closes when full or when the oldest request has waited max_wait_s, but
        # never before the accelerator is free.
        full_index = head + max_batch - 1
        close = max(start, oldest + max_wait_s)
        if full_index < requests and arrivals[full_index] <= close:
            close = max(start, arrivals[full_index])
        end = int(np.searchsorted(arrivals, close, side="right"))
        end = min(end, head + max_batch, requests)
        done = close + service_time(end - head)
        latencies[head:end] = done - arrivals[head:end]
        free_at = done
        head = end
    return latencies


# --- Sizing one accelerator's deployment -------------------------------------------------------

# Replica counts tried above the capacity bound: every count up to this many extra, then a
# geometric ladder, so a deployment needing thousands of slow replicas is still sized.
_EXACT_EXTRA = 64
_LADDER = np.unique(np.round(np.geomspace(1, 4096, 120)).astype(int))


@dataclass(frozen=True)
class ReplicaPlan:
    """The cheapest way one kind of replica serves the target rate within the SLO."""

    replicas: int
    batch: int  # max batch size configured
    max_wait_s: float  # max batching wait configured
    formed_batch: float  # requests per batch at the design rate
    rate_per_replica: float  # design requests/s per replica (target × headroom / replicas)
    capacity_per_replica: float  # requests/s one replica sustains at the formed batch (saturated)
    utilisation: float
    latency_s: dict[float, float]  # quantile → predicted latency at the design rate
    latency_mean_s: float


@dataclass(frozen=True)
class PlanOutcome:
    plan: ReplicaPlan | None
    reason: str  # why no plan exists; empty when there is one


def plan_replicas(
    batch_sizes: ArrayLike,
    service_s: ArrayLike,
    *,
    qps: float,
    slo_s: dict[float, float],
    headroom: float = 1.25,
    max_wait_options_s: ArrayLike = (np.inf,),
    max_replicas: int = 100_000,
) -> PlanOutcome:
    """Fewest replicas (then lowest latency) meeting every ``quantile → seconds`` SLO at ``qps``.

    ``service_s[i]`` is the time of one batch of ``batch_sizes[i]`` on one replica (sizes that do
    not fit are left out by the caller); service times between sizes are interpolated linearly.
    Replicas are sized for ``qps × headroom``. Evaluated for every batch × max wait × replica
    count at once.
    """
    if qps <= 0 or not slo_s:
        raise ValueError("qps must be positive and at least one SLO given")
    sizes = np.asarray(batch_sizes, dtype=np.float64)
    service = np.asarray(service_s, dtype=np.float64)
    if sizes.size == 0:
        return PlanOutcome(None, "no batch size fits in memory")
    order = np.argsort(sizes)
    sizes, service = sizes[order], service[order]
    design_rate = qps * headroom
    tightest = min(slo_s.values())
    if service[0] > tightest:
        return PlanOutcome(
            None,
            f"one request alone takes {service[0] * 1e3:.3g} ms, over the "
            f"{tightest * 1e3:.3g} ms SLO at every batch size",
        )
    per_request = float(np.min(service / sizes))
    lowest = max(1, int(np.ceil(design_rate * per_request)))
    counts = np.unique(np.concatenate([lowest + np.arange(_EXACT_EXTRA), lowest * _LADDER]))
    counts = counts[counts <= max_replicas]
    if counts.size == 0:
        return PlanOutcome(None, f"needs more than {max_replicas} replicas for {qps:g} requests/s")
    waits = np.asarray(max_wait_options_s, dtype=np.float64)

    batch = sizes[:, None, None]
    wait = waits[None, :, None]
    rate = design_rate / counts[None, None, :].astype(np.float64)
    formed = effective_batch(rate, batch, wait)
    formed_service = np.interp(formed, sizes, service)
    feasible = np.ones(np.broadcast_shapes(batch.shape, wait.shape, rate.shape), dtype=bool)
    results = {}
    for quantile, limit in slo_s.items():
        result = batching_latency(rate, formed, formed_service, quantile, wait)
        results[quantile] = result
        feasible &= result.stable & (result.latency_quantile_s <= limit)
    if not feasible.any():
        return PlanOutcome(None, f"misses the SLO at every batch size with up to {int(counts[-1])} replicas")
    any_result = results[next(iter(slo_s))]
    # Fewest replicas first, then the lowest latency at the tightest quantile.
    replica_grid = np.broadcast_to(counts[None, None, :], feasible.shape)
    score_latency = results[max(slo_s)].latency_quantile_s
    fewest = replica_grid[feasible].min()
    candidates = feasible & (replica_grid == fewest)
    best = np.unravel_index(np.argmin(np.where(candidates, score_latency, np.inf)), feasible.shape)
    i_batch, i_wait, i_count = (int(i) for i in best)
    chosen_wait = float(waits[i_wait])
    formed_at_best = float(any_result.batch[best])
    if not np.isfinite(chosen_wait):
        # An unbounded wait is configured as the time the batch takes to fill at the design rate.
        chosen_wait = float(any_result.fill_s[best])
    return PlanOutcome(
        ReplicaPlan(
            replicas=int(counts[i_count]),
            batch=int(sizes[i_batch]),
            max_wait_s=chosen_wait,
            formed_batch=formed_at_best,
            rate_per_replica=float(rate[0, 0, i_count]),
            # Saturated throughput at the batch the design rate actually forms.
            capacity_per_replica=float(formed_at_best / np.interp(formed_at_best, sizes, service)),
            utilisation=float(any_result.utilisation[best]),
            latency_s={q: float(r.latency_quantile_s[best]) for q, r in results.items()},
            latency_mean_s=float(any_result.latency_mean_s[best]),
        ),
        "",
    )
