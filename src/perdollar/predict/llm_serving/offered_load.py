"""A replica at the load its users state: N requests in flight, or R requests a second.

Benchmarks of serving engines fix the load one of two ways: a closed loop of N clients, each
sending its next request as soon as its last one finishes (``vllm bench serve --max-concurrency``,
GuideLLM's concurrent profiles), or an open loop of Poisson arrivals at R requests/s. Neither is a
static batch: under continuous batching a request arriving while others decode is prefilled in
chunks beside their decode tokens, up to the engine's token budget a step (vLLM's
max_num_batched_tokens, SGLang's chunked_prefill_size), so its first token waits for its own
prompt and whatever was queued ahead of it, not for N prompts at once.

This module runs that scheduler (:mod:`~perdollar.predict.llm_serving.scheduler`) over the step
physics the rest of the serving model uses (weights and KV streamed, products, collectives, host
time a step), deterministically (Poisson arrivals from a fixed seed). Decoding sequences are held
at the mean context of a request (prompt plus half its output), as the rest of the serving model
holds them. Identical requests started together stay in step where their prompts fit one token
budget (each round's prompts share a step), as they do on the engine; longer ones fall apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.load import RequestShape
from perdollar.predict.llm_serving.scheduler import Samples, StepSeconds, simulate, step_model
from perdollar.predict.llm_serving.timing import DEFAULT_EFFICIENCY, GroupShape, ServingEfficiency
from perdollar.workload.llm.architecture import DecoderArchitecture

# vLLM's `vllm serve` default max_num_batched_tokens (EngineArgs.get_batch_defaults in
# vllm/engine/arg_utils.py, v0.9-0.10): 8192 on GPUs of 70 GiB or more other than the A100, 2048 on
# the rest.
_VLLM_LARGE_GPU_GIB = 70.0
_VLLM_BUDGETS = (8192, 2048)
# The other engines' token budgets a step, as their defaults state them. None: the engine prefills
# a prompt whole, and its running sequences wait for that step.
PREFILL_TOKEN_BUDGET_SOURCES = {
    "vllm": "vLLM EngineArgs.get_batch_defaults: max_num_batched_tokens 8192 (>= 70 GiB but A100), else 2048",
    "sglang": "SGLang server args: chunked_prefill_size 8192 on large GPUs",
    "tensorrt-llm": "TensorRT-LLM build and trtllm-bench default max_num_tokens 8192",
    "tgi": "TGI launcher: --max-batch-prefill-tokens default 4096",
    "llama.cpp": "llama-server processes a prompt in its own batches, not mixed with decode tokens",
    "hf": "transformers generate() prefills the whole batch, then decodes",
}
_FIXED_BUDGETS: dict[str, int | None] = {
    "sglang": 8192,
    "tensorrt-llm": 8192,
    "tgi": 4096,
    "llama.cpp": None,
    "hf": None,
}
# Bounds that keep one prediction well under a second: past them a figure needs a fleet, not a replica.
MAX_CONCURRENCY = 100_000
_QUANTILES = (0.5, 0.99)
# Requests measured for the quantiles (p99 needs a few hundred), after a warm-up of the same kind.
_MEASURED_REQUESTS = 400
_OPEN_LOOP_REQUESTS = 2000
# An open loop whose waiting queue holds more than this share of its measured requests when the last
# of them arrives is not in a steady state: the queue grows.
_BACKLOG_SHARE = 0.10


def prefill_token_budget(engine: str, accelerator: Accelerator) -> int | None:
    """Prompt and decode tokens the engine's scheduler puts in one step by default (None: no chunking);
    a dated build (vllm@2024) is scheduled as its engine is."""
    engine = engine.partition("@")[0]
    if engine == "vllm":
        large = accelerator.memory_gib >= _VLLM_LARGE_GPU_GIB and "A100" not in accelerator.key.upper()
        return _VLLM_BUDGETS[0] if large else _VLLM_BUDGETS[1]
    if engine not in _FIXED_BUDGETS:
        raise PerdollarError(
            f"--concurrency and --rps are modelled for the GPU serving engines, not {engine}",
            "drop --concurrency/--rps (a maximum-load or --batch prediction still works), or choose a GPU",
        )
    return _FIXED_BUDGETS[engine]


@dataclass(frozen=True, slots=True)
class OfferedLoad:
    """The load as a benchmark states it: ``concurrency`` requests in flight (closed loop), or
    ``requests_per_second`` arriving as a Poisson stream (open loop); exactly one is given."""

    concurrency: int | None = None
    requests_per_second: float | None = None

    @property
    def mode(self) -> str:
        return "concurrency" if self.concurrency is not None else "rate"

    @property
    def label(self) -> str:
        if self.concurrency is not None:
            return f"{self.concurrency} requests in flight"
        return f"{self.requests_per_second:g} requests/s (Poisson arrivals)"


def offered_load(concurrency: int | None, requests_per_second: float | None) -> OfferedLoad | None:
    """The load asked for, checked (None: neither given); a value that names no load is refused."""
    if concurrency is not None and requests_per_second is not None:
        raise PerdollarError(
            "--concurrency and --rps each fix the load", "give one of --concurrency N or --rps R, not both"
        )
    if concurrency is not None:
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
            raise PerdollarError(
                f"--concurrency {concurrency!r} is not a count of requests in flight",
                "give a whole number of at least 1, e.g. --concurrency 8",
            )
        if concurrency > MAX_CONCURRENCY:
            raise PerdollarError(
                f"--concurrency {concurrency} is above the {MAX_CONCURRENCY:,} requests in flight one "
                "prediction simulates",
                f"give at most {MAX_CONCURRENCY}, or size a fleet with recommend --inference --rps",
            )
        return OfferedLoad(concurrency=concurrency)
    if requests_per_second is not None:
        rate = requests_per_second
        number = isinstance(rate, int | float) and not isinstance(rate, bool)
        if not number or not math.isfinite(rate) or rate <= 0:
            raise PerdollarError(
                f"--rps {requests_per_second!r} is not a request rate",
                "give a finite number of requests a second above 0, e.g. --rps 2.5",
            )
        return OfferedLoad(requests_per_second=float(rate))
    return None


@dataclass(frozen=True, slots=True)
class Quantiles:
    p50: float
    p99: float


@dataclass(frozen=True, slots=True)
class LoadFigures:
    """The replicas at an offered load: latency quantiles over the measured requests (ms) and the
    rates served (over every replica). ``over_capacity``: the offered rate exceeds what the replicas
    serve, so the queue grows without bound and no latency holds (the quantiles are NaN)."""

    load: OfferedLoad
    ttft_ms: Quantiles
    tpot_ms: Quantiles  # per request: (end-to-end − TTFT) / (output tokens − 1)
    itl_ms: Quantiles  # every gap between two tokens of a sequence
    e2e_ms: Quantiles
    output_tokens_per_second: float
    requests_per_second: float
    mean_running: float  # requests admitted and running on a replica, on average
    capacity_requests_per_second: float  # the most the replicas serve (maximum load), over all
    over_capacity: bool
    prefill_token_budget: int | None
    running_cap: int  # sequences a replica admits at once (KV cache and engine cap)
    measured_requests: int


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _weighted_quantile(pairs: list[tuple[float, int]], q: float) -> float:
    total = sum(weight for _, weight in pairs)
    if total <= 0:
        return math.nan
    target, seen = q * total, 0
    for value, weight in sorted(pairs):
        seen += weight
        if seen >= target:
            return value
    return max(value for value, _ in pairs)


def _replica_loads(load: OfferedLoad, replicas: int) -> list[tuple[OfferedLoad, int]]:
    """Each distinct per-replica load and how many replicas carry it: clients spread as evenly as a
    round-robin balancer spreads them, a Poisson stream split evenly (still Poisson)."""
    if load.concurrency is None:
        assert load.requests_per_second is not None
        return [(OfferedLoad(requests_per_second=load.requests_per_second / replicas), replicas)]
    base, extra = divmod(load.concurrency, replicas)
    shares = [(OfferedLoad(concurrency=base + 1), extra), (OfferedLoad(concurrency=base), replicas - extra)]
    return [(share, count) for share, count in shares if count and share.concurrency]


def at_offered_load(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    load: OfferedLoad,
    *,
    running_cap: int,
    budget: int | None,
    shape: GroupShape = GroupShape(),
    replicas: int = 1,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> LoadFigures:
    """``replicas`` copies of one replica at ``load`` (latencies of any request, rates over all).

    ``running_cap``: the sequences a replica admits at once (its KV cache and the engine's cap).
    The replicas' capacity is what this scheduler serves with every admitted slot busy (a closed
    loop of ``running_cap`` clients); an open-loop rate at or above it is over capacity.
    """
    seconds = step_model(arch, fmt, accelerator, shape, work, efficiency)
    saturated = _closed_loop(seconds, work, running_cap, budget, running_cap)
    capacity = _completion_rate(saturated) * replicas
    nan = Quantiles(math.nan, math.nan)
    over = LoadFigures(load, nan, nan, nan, nan, capacity * work.output_tokens, capacity, float(running_cap),
                       capacity, True, budget, running_cap, 0)  # fmt: skip
    if load.requests_per_second is not None and load.requests_per_second >= capacity:
        return over
    ttft: list[float] = []
    e2e: list[float] = []
    tpot: list[float] = []
    gaps: list[tuple[float, int]] = []
    served = running = 0.0
    for share, count in _replica_loads(load, replicas):
        if share.concurrency is not None:
            samples = _closed_loop(seconds, work, running_cap, budget, share.concurrency)
            rate = _completion_rate(samples)
        else:
            rate = share.requests_per_second or 0.0
            samples = simulate(seconds, work, running_cap, budget, rate=rate,
                                warm=max(_OPEN_LOOP_REQUESTS // 4, 2 * running_cap),
                                measured=_OPEN_LOOP_REQUESTS)  # fmt: skip
            if samples.backlog_at_last_arrival > _BACKLOG_SHARE * _OPEN_LOOP_REQUESTS:
                return over
        # Each replica's samples count once per replica carrying that load.
        ttft += samples.ttft * count
        e2e += samples.e2e * count
        tpot += samples.tpot * count
        gaps += [(gap, weight * count) for gap, weight in samples.gaps]
        served += rate * count
        running += samples.running_time / samples.window_s * count if samples.window_s > 0 else 0.0

    def ms(values: list[float]) -> Quantiles:
        return Quantiles(*(_quantile(values, q) * 1e3 for q in _QUANTILES))

    itl = Quantiles(*(_weighted_quantile(gaps, q) * 1e3 for q in _QUANTILES))
    return LoadFigures(
        load, ms(ttft), ms(tpot), itl, ms(e2e), served * work.output_tokens, served, running / replicas,
        capacity, False, budget, running_cap, len(e2e),
    )  # fmt: skip


def _closed_loop(
    seconds: StepSeconds,
    work: RequestShape,
    running_cap: int,
    budget: int | None,
    clients: int,
) -> Samples:
    """``clients`` in a closed loop, measured after each has had a request served and the admitted
    ones a second (the first round starts them all at once, as a benchmark does)."""
    busy = min(clients, running_cap)
    return simulate(seconds, work, running_cap, budget, clients=clients, warm=clients + busy,
                     measured=max(_MEASURED_REQUESTS, 4 * busy))  # fmt: skip


def _completion_rate(samples: Samples) -> float:
    return samples.completed_in_window / samples.window_s if samples.window_s > 0 else 0.0
