"""An LLM replica under load: static batches, continuous batching at a request rate, and its ceiling.

Continuous (in-flight) batching runs one mixed iteration after another: a decode token for each
of the N running sequences plus a slice of new prompts. In steady state each iteration finishes
N/O requests, so it also carries N·I/O prompt tokens (chunked prefill). Output tokens/s is then
N / iteration time, and by Little's law N = rate · (time to first token + O · iteration time).
The most a replica sustains is at the largest N the KV cache and the engine allow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import partial

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.expert_parallel import expert_parallel_problem
from perdollar.predict.llm_serving.features import Speculation
from perdollar.predict.llm_serving.formats import ServingFormat, unsupported_reason
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GIB,
    GroupShape,
    ServingEfficiency,
    StepTime,
    _stage_time,
    _weights_read_per_gpu,
    busiest_group_prompts,
    busiest_group_sequences,
    decode_attention_flops,
    decode_step_time,
    kv_bytes_per_token_per_gpu,
    kv_cache_bytes_per_gpu,
    max_concurrent_sequences,
    prefill_time,
    weight_bytes_per_gpu,
)
from perdollar.predict.parallel_limits import pipeline_parallel_problem, tensor_parallel_problem
from perdollar.workload.llm.architecture import DecoderArchitecture

# 80% band: the 80th percentile of held-out errors of max-throughput output tokens/s in
# benchmarks/llm_serving_accuracy.py (24%), taken on both sides.
THROUGHPUT_BAND = (0.76, 1.24)


@dataclass(frozen=True, slots=True)
class RequestShape:
    """Requests of ``input_tokens`` in and ``output_tokens`` out; ``prefix_share`` of every prompt
    found in the prefix cache; ``speculation``: how the engine decodes (None: a token a step)."""

    input_tokens: int
    output_tokens: int
    prefix_share: float = 0.0
    speculation: Speculation | None = None

    @property
    def tokens_per_sequence(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cached_tokens(self) -> int:
        """Prompt tokens read from the prefix cache (at least one prompt token is always computed)."""
        return min(int(self.prefix_share * self.input_tokens), self.input_tokens - 1)

    @property
    def uncached_tokens(self) -> int:
        return self.input_tokens - self.cached_tokens

    @property
    def tokens_per_step(self) -> float:
        """Output tokens a sequence gains per decode step (more than one with speculative decoding)."""
        return self.speculation.expected_tokens if self.speculation else 1.0

    @property
    def positions_per_step(self) -> int:
        return self.speculation.verify_width if self.speculation else 1

    @property
    def decode_steps(self) -> float:
        """Decode steps a request takes to produce its output."""
        return self.output_tokens / self.tokens_per_step

    @property
    def mean_context(self) -> float:
        return self.input_tokens + self.output_tokens / 2


@dataclass(frozen=True, slots=True)
class LLMServingPrediction:
    """One replica (T × P GPUs) of one model in one format; rates total over its GPUs."""

    precision: str
    tensor_parallel: int
    pipeline_parallel: int
    output_tokens_per_second: float
    output_tokens_per_second_low: float
    output_tokens_per_second_high: float
    requests_per_second: float
    ttft_ms: float  # unqueued prefill of one request (plus the running iteration under load)
    tpot_ms: float  # time per output token of one sequence
    batch: float  # running sequences
    max_concurrent_sequences: int
    kv_cache_gib: float  # per GPU, left for the cache beside the weights
    weights_gib_per_gpu: float
    fits: bool
    fit_reason: str
    bottleneck: str
    basis: str = "spec"
    mode: str = "max-load"  # max-load | static-batch | rate
    engine: str = ""  # the serving engine predicted ('' where the caller chose none)
    kv_precision: str = ""
    breakdown_ms: dict[str, float] = field(default_factory=dict)
    expert_parallel: int = 1
    disaggregation: str = ""  # xPyD: the prediction is of x prefill and y decode replicas together


def mixed_iteration(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    running: float,
    work: RequestShape,
    eff: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> StepTime:
    """One continuous-batching iteration: ``running`` decode tokens plus their share of new prompts.

    With P pipeline stages the running sequences move as P micro-batches, one in each stage at a
    time: a sequence waits P stage times for its next token while the stages stay busy. With
    speculative decoding each sequence multiplies k+1 positions a step and gains the expected
    tokens of a verify step, and the step waits for the proposer's k passes first.
    """
    micro = running / shape.pipeline_parallel
    prompts = micro / work.decode_steps  # requests finishing (and so starting) per iteration
    prompt_tokens = prompts * work.uncached_tokens
    q_width = arch.num_attention_heads * arch.head_dim
    positions = work.positions_per_step
    per_rank = busiest_group_sequences(micro, shape)
    groups = shape.attention_data_parallel
    # Each prompt is prefilled by its own sequence's group: the busiest group's prompts, on every group.
    group_prompts = busiest_group_prompts(prompts, shape)
    attention = decode_attention_flops(arch) * work.mean_context * per_rank * groups * positions
    attention += (2.0 * arch.num_layers * q_width * group_prompts * groups
                  * (work.input_tokens**2 - work.cached_tokens**2))  # fmt: skip
    kv = per_rank * work.mean_context * kv_bytes_per_token_per_gpu(arch, fmt, shape)
    tokens = micro * positions + prompt_tokens
    bytes_read = _weights_read_per_gpu(arch, fmt, shape, tokens)
    step = _stage_time(
        arch,
        fmt,
        accelerator,
        shape,
        eff,
        tokens=tokens,
        bytes_read=bytes_read,
        attention_flops=attention,
        kv_bytes=kv,
        group_tokens=per_rank * positions + group_prompts * work.uncached_tokens,
    )
    return with_proposer(arch, fmt, accelerator, shape, micro, work, eff, step)


def with_proposer(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    batch: float,
    work: RequestShape,
    eff: ServingEfficiency,
    step: StepTime,
) -> StepTime:
    """``step`` plus the proposer's passes that speculative decoding runs before each verify step.

    Each pass is a decode step of a model ``proposer_share`` the size of this one (its weights,
    cache and FLOPs scale so); the engine's host time is paid once for the whole step.
    """
    spec = work.speculation
    if spec is None:
        return step
    plain = decode_step_time(arch, fmt, accelerator, shape, batch, work.mean_context, eff)
    proposer_s = spec.proposer_steps() * spec.proposer_share(arch) * (plain.seconds - eff.step_overhead_s)
    return replace(step, seconds=step.seconds + proposer_s, proposer_s=proposer_s)


def _breakdown(step: StepTime, arch: DecoderArchitecture) -> dict[str, float]:
    """ms by part of one step; a MoE model's layers apart from the rest (attention, dense layers,
    shared experts and tensor-parallel collectives)."""
    if not arch.is_moe:
        return {
            "memory": step.memory_s * 1e3,
            "compute": step.compute_s * 1e3,
            "communication": step.communication_s * 1e3,
            "overhead": step.overhead_s * 1e3,
            **({"proposer": step.proposer_s * 1e3} if step.proposer_s else {}),
        }
    return {
        "memory": (step.memory_s - step.moe_experts_memory_s) * 1e3,
        "compute": (step.compute_s - step.moe_experts_compute_s) * 1e3,
        "communication": (step.communication_s - step.moe_all_to_all_s) * 1e3,
        "overhead": step.overhead_s * 1e3,
        "moe_routing": step.moe_routing_s * 1e3,
        "moe_experts": step.moe_experts_s * 1e3,
        "moe_all_to_all": step.moe_all_to_all_s * 1e3,
        **({"proposer": step.proposer_s * 1e3} if step.proposer_s else {}),
    }


def predict_llm_serving(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    *,
    shape: GroupShape = GroupShape(),
    batch: int | None = None,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> LLMServingPrediction:
    """At maximum sustainable load (continuous batching), or for a static ``batch`` when given."""
    weights_gib = weight_bytes_per_gpu(arch, fmt, shape) / GIB
    kv_gib = kv_cache_bytes_per_gpu(arch, fmt, accelerator, shape, efficiency) / GIB
    limit = max_concurrent_sequences(
        arch, fmt, accelerator, shape, work.tokens_per_sequence, efficiency,
        shared_prefix_tokens=work.cached_tokens,
    )  # fmt: skip
    prediction = partial(
        LLMServingPrediction,
        precision=fmt.name,
        tensor_parallel=shape.tensor_parallel,
        pipeline_parallel=shape.pipeline_parallel,
        expert_parallel=shape.expert_parallel,
        max_concurrent_sequences=limit,
        kv_cache_gib=max(kv_gib, 0.0),
        weights_gib_per_gpu=weights_gib,
    )
    unsupported = unsupported_reason(accelerator, fmt)
    misshapen = serving_shape_problem(arch, shape)
    reason = unsupported or misshapen or _fit_reason(accelerator, shape, weights_gib, kv_gib, limit)
    cause = "unsupported-format" if unsupported else "model-shape" if misshapen else "memory-capacity"
    if batch is not None and not reason and batch > limit:
        reason = f"a batch of {batch} needs the KV cache of {batch} sequences; {limit} fit"
    if reason:
        return prediction(
            output_tokens_per_second=0.0, output_tokens_per_second_low=0.0,
            output_tokens_per_second_high=0.0, requests_per_second=0.0, ttft_ms=math.nan, tpot_ms=math.nan,
            batch=0, fits=False, fit_reason=reason,
            bottleneck=cause,
        )  # fmt: skip
    first = first_token_time(arch, fmt, accelerator, shape, work, efficiency)
    if batch is not None:
        # A static batch: every prompt prefilled together, then O decode steps of the whole batch.
        prompt = prefill_time(arch, fmt, accelerator, shape, work.input_tokens, efficiency, sequences=batch,
                              cached_tokens=work.cached_tokens)  # fmt: skip
        prompt_s = max(prompt.seconds, first.seconds)
        step = decode_step_time(arch, fmt, accelerator, shape, batch, work.mean_context, efficiency,
                                positions=work.positions_per_step)  # fmt: skip
        step = with_proposer(arch, fmt, accelerator, shape, batch, work, efficiency, step)
        total_s = prompt_s + work.decode_steps * step.seconds
        rate, running, ttft_s, mode = batch / total_s, float(batch), prompt_s, "static-batch"
    else:
        # Each attention data-parallel rank schedules its own batch up to the engine's cap (vLLM runs
        # an engine core per data-parallel rank).
        running = float(min(limit, efficiency.max_batch * shape.attention_data_parallel))
        step = mixed_iteration(arch, fmt, accelerator, shape, running, work, efficiency)
        rate = running / (work.decode_steps * step.seconds)
        ttft_s, mode = first.seconds, "max-load"
    tokens = rate * work.output_tokens
    return prediction(
        output_tokens_per_second=tokens,
        output_tokens_per_second_low=tokens * THROUGHPUT_BAND[0],
        output_tokens_per_second_high=tokens * THROUGHPUT_BAND[1],
        requests_per_second=rate,
        ttft_ms=ttft_s * 1e3,
        tpot_ms=step.seconds / work.tokens_per_step * 1e3,
        batch=running,
        fits=True,
        fit_reason="",
        bottleneck=step.bottleneck,
        mode=mode,
        breakdown_ms=_breakdown(step, arch),
    )


def first_token_time(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    work: RequestShape,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> StepTime:
    """One request's prompt prefilled alone, its cached prefix read rather than computed."""
    return prefill_time(arch, fmt, accelerator, shape, work.input_tokens, efficiency,
                        cached_tokens=work.cached_tokens)  # fmt: skip


def serving_shape_problem(arch: DecoderArchitecture, shape: GroupShape) -> str:
    """Why a replica cannot be laid over ``shape`` as vLLM lays it ('' when it can)."""
    return (
        pipeline_parallel_problem(arch, shape.pipeline_parallel)
        or tensor_parallel_problem(arch, shape.tensor_parallel, serving=True)
        or expert_parallel_problem(arch, shape.tensor_parallel, shape.expert_parallel)
        or _data_parallel_attention_problem(arch, shape)
    )


def _data_parallel_attention_problem(arch: DecoderArchitecture, shape: GroupShape) -> str:
    groups = shape.data_parallel_attention
    if groups <= 1:
        return ""
    ranks = shape.tensor_parallel * groups
    if not arch.is_moe:
        return f"data-parallel attention needs a mixture-of-experts model; serve {groups} replicas instead"
    if shape.expert_parallel > 1 and shape.expert_parallel != ranks:
        return (f"expert parallel {shape.expert_parallel} is not the {ranks} ranks of {groups} data-parallel "
                f"attention groups of tensor parallel {shape.tensor_parallel}")  # fmt: skip
    return ""


def _fit_reason(
    accelerator: Accelerator, shape: GroupShape, weights_gib: float, kv_gib: float, limit: int
) -> str:
    if kv_gib <= 0:
        return (
            f"{weights_gib:.1f} GiB of weights per GPU do not fit in {accelerator.key}'s "
            f"{accelerator.memory_gib:g} GiB with room for activations"
            f" (tensor parallel {shape.tensor_parallel})"
        )
    if limit < 1:
        return f"no room for one sequence's KV cache ({kv_gib:.2f} GiB left per GPU)"
    return ""
