"""Replaying traffic against a fleet of language-model replicas, request by request.

The replicas follow the same physics as the capacity model (:mod:`.load`): a prompt waits in a
first-come queue for its prefill (one prefill at a time, the M/D/1 queue of :func:`.load.at_rate`),
then decodes in the running batch, one token per continuous-batching iteration whose length is
:func:`.load.mixed_iteration` at the number of sequences running. Prompts prefilled on the same
replica while a request decodes stretch its tokens (chunked prefill shares the iterations). A
replica runs at most its engine's batch: a prompt beyond it waits for a sequence to finish.

Requests go to the replica with the shortest prefill backlog among those serving their class,
as a least-outstanding-requests load balancer sends them. The replay is seeded; it checks a plan
(SLO attainment per interval), it does not make one.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perdollar.catalog.model import DEFAULT_INSTANCE_START_S, Accelerator
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.load import RequestShape, mixed_iteration, predict_llm_serving
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GroupShape,
    ServingEfficiency,
    prefill_time,
)
from perdollar.workload.llm.architecture import DecoderArchitecture

DEFAULT_REQUESTS_PER_INTERVAL = 6000
_WARM_UP_SHARE = 0.1  # of each interval's replayed requests, left out of its quantiles


@dataclass(frozen=True, slots=True)
class ReplicaService:
    """Per request class: prefill seconds and output tokens; iteration seconds by running batch."""

    prefill_s: tuple[float, ...]
    output_tokens: tuple[int, ...]
    iteration_s: tuple[tuple[float, ...], ...]  # [class][running − 1]

    @property
    def max_batch(self) -> int:
        return len(self.iteration_s[0])


def replica_service(
    arch: DecoderArchitecture, accelerator: Accelerator, fmt: ServingFormat, shape: GroupShape,
    classes: Sequence[RequestShape], efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> ReplicaService:  # fmt: skip
    """The service times of one replica for each class of requests."""
    tops = [
        predict_llm_serving(arch, accelerator, fmt, w, shape=shape, efficiency=efficiency) for w in classes
    ]
    batch = max(1, int(min(top.batch for top in tops)))
    prefill = tuple(
        prefill_time(arch, fmt, accelerator, shape, w.input_tokens, efficiency).seconds for w in classes
    )
    steps = tuple(
        tuple(
            mixed_iteration(arch, fmt, accelerator, shape, n, w, efficiency).seconds
            for n in range(1, batch + 1)
        )
        for w in classes
    )
    return ReplicaService(prefill, tuple(w.output_tokens for w in classes), steps)


@dataclass(frozen=True, slots=True)
class Pool:
    """Replicas of one kind in an interval and the requests/s of each class sent to them."""

    service: ReplicaService
    replicas: int
    class_rates: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class IntervalReplay:
    requests: int
    ttft_p99_ms: float
    tpot_p99_ms: float
    meets_slo: bool


def _route(classes: np.ndarray, pools: Sequence[Pool], rng: np.random.Generator) -> np.ndarray:
    """The pool of each request: by class, in proportion to the rate the plan routes there."""
    chosen = np.zeros(len(classes), dtype=int)
    for c in np.unique(classes):
        weights = np.array([p.class_rates[c] if p.replicas else 0.0 for p in pools])
        mask = classes == c
        if weights.sum() <= 0:
            chosen[mask] = -1  # nobody serves this class: its requests miss the SLO
            continue
        chosen[mask] = rng.choice(len(pools), size=int(mask.sum()), p=weights / weights.sum())
    return chosen


def _serve_pool(arrivals: np.ndarray, classes: np.ndarray, pool: Pool) -> tuple[np.ndarray, np.ndarray]:
    """TTFT and TPOT (seconds) of each request sent to the pool, in arrival order."""
    service = pool.service
    count = len(arrivals)
    ttft, tpot = np.empty(count), np.empty(count)
    prefill_free = [0.0] * pool.replicas
    running: list[list[float]] = [[] for _ in range(pool.replicas)]
    replica_of = np.empty(count, dtype=int)
    starts = np.empty(count)
    decode_s = np.empty(count)
    for i in range(count):
        t, c = float(arrivals[i]), int(classes[i])
        r = min(range(pool.replicas), key=prefill_free.__getitem__)
        ends = running[r]
        while ends and ends[0] <= t:
            heapq.heappop(ends)
        start = max(t, prefill_free[r])
        if len(ends) >= service.max_batch:  # a full batch: wait for a sequence to finish
            start = max(start, heapq.heappop(ends))
        first = service.prefill_s[c]
        prefill_free[r] = start + first
        step = service.iteration_s[c][min(len(ends) + 1, service.max_batch) - 1]
        ttft[i] = start + first + step - t
        decode_s[i] = service.output_tokens[c] * step
        heapq.heappush(ends, start + first + decode_s[i])
        replica_of[i], starts[i] = r, start + first
    # Prompts prefilled on the same replica while a request decodes stretch its tokens.
    prefills = np.array([service.prefill_s[int(c)] for c in classes])
    for r in range(pool.replicas):
        mine = np.flatnonzero(replica_of == r)
        begun = starts[mine] - prefills[mine]
        done_work = np.concatenate([[0.0], np.cumsum(prefills[mine])])
        lo = np.searchsorted(begun, starts[mine], side="right")
        hi = np.searchsorted(begun, starts[mine] + decode_s[mine], side="right")
        outputs = np.array([service.output_tokens[int(c)] for c in classes[mine]])
        tpot[mine] = (decode_s[mine] + done_work[hi] - done_work[lo]) / outputs
    return ttft, tpot


def replay_interval(
    arrivals: np.ndarray, classes: np.ndarray, pools: Sequence[Pool], *, ttft_p99_ms: float | None,
    tpot_p99_ms: float | None, seed: int = 0,
) -> IntervalReplay:  # fmt: skip
    """Serve ``arrivals`` (seconds, sorted) of the given class indices on the pools."""
    rng = np.random.default_rng(seed)
    pool_of = _route(classes, pools, rng)
    ttft = np.full(len(arrivals), np.inf)
    tpot = np.full(len(arrivals), np.inf)
    for index, pool in enumerate(pools):
        mask = pool_of == index
        if mask.any() and pool.replicas:
            ttft[mask], tpot[mask] = _serve_pool(arrivals[mask], classes[mask], pool)
    kept = slice(int(_WARM_UP_SHARE * len(arrivals)), None)
    ttft_q = float(np.quantile(ttft[kept], 0.99)) * 1e3 if len(arrivals) else 0.0
    tpot_q = float(np.quantile(tpot[kept], 0.99)) * 1e3 if len(arrivals) else 0.0
    meets = (ttft_p99_ms is None or ttft_q <= ttft_p99_ms) and (tpot_p99_ms is None or tpot_q <= tpot_p99_ms)
    return IntervalReplay(len(arrivals), ttft_q, tpot_q, bool(meets))


def poisson_arrivals(
    class_rates: Sequence[float], duration_s: float, *, max_requests: int = DEFAULT_REQUESTS_PER_INTERVAL,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Poisson arrivals of each class over the interval, or over its first part holding ``max_requests``."""
    rng = np.random.default_rng(seed)
    total = sum(class_rates)
    if total <= 0:
        return np.zeros(0), np.zeros(0, dtype=int)
    window = min(duration_s, max_requests / total)
    count = rng.poisson(total * window)
    arrivals = np.sort(rng.uniform(0.0, window, size=count))
    classes = rng.choice(len(class_rates), size=count, p=np.asarray(class_rates) / total)
    return arrivals, classes


# Where the catalog gives no network bandwidth: 10 Gb/s, the floor of current GPU instances.
DEFAULT_NETWORK_GBPS = 10.0
# Weights read from the boot volume: an EBS gp3 volume's highest throughput, 1,000 MiB/s
# (AWS EBS volume types documentation, 2024), taken as the disk's ceiling everywhere.
DEFAULT_DISK_BYTES_PER_S = 1000 * 1024**2


def scale_up_seconds(
    weights_bytes: float, network_gbps: float | None, *, instance_start_s: float = DEFAULT_INSTANCE_START_S
) -> float:
    """Instance start plus model load: the weights over the slower of disk and network."""
    network = (network_gbps if network_gbps and network_gbps > 0 else DEFAULT_NETWORK_GBPS) * 1e9 / 8
    return instance_start_s + weights_bytes / min(network, DEFAULT_DISK_BYTES_PER_S)
