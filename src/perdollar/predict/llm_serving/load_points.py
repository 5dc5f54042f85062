"""A replica at a request rate: the running batch by Little's law, and the latency quantiles.

Continuous batching at a rate settles where the running batch N = rate · (time to first token +
O · iteration time); the prompts queue for prefill (M/D/1) and each decode token waits for the
prompts that arrive meanwhile. A search over rates (the deployment search's bisection) asks one
replica for many load points, so what does not depend on the rate or the running batch is worked
out once per replica (:func:`load_points`, :func:`iteration_seconds`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.load import (
    LLMServingPrediction,
    RequestShape,
    first_token_time,
    mixed_iteration,
    predict_llm_serving,
)
from perdollar.predict.llm_serving.rates import (
    flops_rate,
    kv_bandwidth,
    tensor_parallel_collectives_s,
    weight_bandwidth,
)
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GroupShape,
    ServingEfficiency,
    _weights_read_per_gpu,
    busiest_group_sequences,
    decode_attention_flops,
    kv_bytes_per_token_per_gpu,
)
from perdollar.workload.llm.architecture import DecoderArchitecture

_Z99 = 2.326  # standard normal quantile at 0.99


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """A replica at a request rate: running batch and latency quantiles."""

    requests_per_second: float
    batch: float
    ttft_ms: float  # at the quantile
    tpot_ms: float  # at the quantile
    tpot_mean_ms: float
    utilisation: float  # of the replica's maximum sustainable rate
    stable: bool


def at_rate(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    rate: float,
    *,
    shape: GroupShape = GroupShape(),
    quantile: float = 0.99,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
    ceiling: LLMServingPrediction | None = None,
) -> LoadPoint:
    """Continuous batching at ``rate`` requests/s with Poisson arrivals."""
    top = ceiling or predict_llm_serving(arch, accelerator, fmt, work, shape=shape, efficiency=efficiency)
    return load_points(arch, accelerator, fmt, work, shape=shape, quantile=quantile, efficiency=efficiency,
                       ceiling=top)(rate)  # fmt: skip


def load_points(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    *,
    ceiling: LLMServingPrediction,
    shape: GroupShape = GroupShape(),
    quantile: float = 0.99,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> Callable[[float], LoadPoint]:
    """:func:`at_rate` of one replica as a function of the rate: a search over rates works out the
    replica's first-token time and iteration constants once."""
    if not ceiling.fits:
        return lambda rate: _over_ceiling(rate, ceiling)
    first = first_token_time(arch, fmt, accelerator, shape, work, efficiency).seconds
    iteration_s = iteration_seconds(arch, fmt, accelerator, shape, work, efficiency)
    return lambda rate: _load_point(rate, ceiling, first, iteration_s, work, quantile)


def _over_ceiling(rate: float, top: LLMServingPrediction) -> LoadPoint:
    return LoadPoint(
        rate, top.batch, math.inf, math.inf, math.inf, rate / max(top.requests_per_second, 1e-12), False
    )


def _load_point(
    rate: float, top: LLMServingPrediction, first: float, iteration_s: Callable[[float], float],
    work: RequestShape, quantile: float,
) -> LoadPoint:  # fmt: skip
    if rate >= top.requests_per_second:
        return _over_ceiling(rate, top)
    running = 1.0
    for _ in range(60):  # Little's law, iterated to its fixed point (a contraction below the ceiling)
        step = iteration_s(running)
        updated = min(rate * (first + work.decode_steps * step), top.batch)
        if abs(updated - running) < 1e-3 * running:
            break
        running = max(updated, 1.0)
    step = iteration_s(running)
    # Prompts queue for prefill (M/D/1; its wait tail approximated as ρ·exp(−t/θ) with the
    # Pollaczek–Khinchine mean), then wait for the running iteration to end.
    rho = min(rate * first, 0.999)
    theta = first / (2.0 * (1.0 - rho))
    wait = theta * math.log(rho / (1.0 - quantile)) if rho > 1.0 - quantile else 0.0
    ttft = wait + first + step
    # The prompts that arrive during a request's decode (Poisson) slow each of its tokens.
    arrivals = rate * work.decode_steps * step
    per_token = step / work.tokens_per_step
    tpot_tail = per_token + _Z99 * math.sqrt(arrivals) * first / work.output_tokens
    utilisation = rate / top.requests_per_second
    return LoadPoint(rate, running, ttft * 1e3, tpot_tail * 1e3, per_token * 1e3, utilisation, True)


def iteration_seconds(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    work: RequestShape,
    eff: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> Callable[[float], float]:
    """The seconds of :func:`mixed_iteration` as a function of the running sequences alone.

    A load point iterates Little's law over one replica a few dozen times and the deployment search
    bisects the rate, so the iteration runs tens of thousands of times per question: for a dense
    model decoding a token a step, what does not depend on the running batch (weights read, cache
    bytes a token, the chip's rates) is worked out once here, and each call does the same arithmetic
    in the same order as :func:`mixed_iteration` (so the same floats). Other models take the full
    iteration.
    """
    if arch.is_moe or work.speculation is not None:
        return lambda running: mixed_iteration(arch, fmt, accelerator, shape, running, work, eff).seconds
    stages, decode_steps, uncached = shape.pipeline_parallel, work.decode_steps, work.uncached_tokens
    positions, groups, gpus = work.positions_per_step, shape.attention_data_parallel, shape.gpus
    context_attention = decode_attention_flops(arch) * work.mean_context
    prompt_attention = 2.0 * arch.num_layers * (arch.num_attention_heads * arch.head_dim)
    prompt_pairs = work.input_tokens**2 - work.cached_tokens**2
    kv_per_token = kv_bytes_per_token_per_gpu(arch, fmt, shape)
    weights_s = _weights_read_per_gpu(arch, fmt, shape, 0.0) / weight_bandwidth(accelerator, fmt, eff)
    rate = flops_rate(accelerator, fmt, eff)
    product_flops = 2.0 * (arch.active_params + arch.lookup_params)
    kv_rate = kv_bandwidth(accelerator, eff)
    overhead = math.ceil(arch.num_layers / stages) * eff.step_overhead_s_per_layer
    mean_context, step_overhead_s = work.mean_context, eff.step_overhead_s
    # One rank and one attention group: no all-reduce, so no collective time whatever the tokens.
    alone = shape.tensor_parallel <= 1 and groups == 1

    def seconds(running: float) -> float:
        micro = running / stages
        prompts = micro / decode_steps
        per_rank = busiest_group_sequences(micro, shape)
        attention = context_attention * per_rank * groups * positions
        attention += prompt_attention * prompts * prompt_pairs
        kv = per_rank * mean_context * kv_per_token
        tokens = micro * positions + prompts * uncached
        matmul_s = product_flops * tokens / gpus / rate
        communication = 0.0 if alone else tensor_parallel_collectives_s(arch, accelerator, shape, tokens, eff)
        stage = (
            max(weights_s, matmul_s) + max(kv / kv_rate, attention / gpus / rate) + communication + overhead
        )
        return stage * stages + step_overhead_s

    return seconds
