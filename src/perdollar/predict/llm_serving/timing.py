"""Time of one prefill and one decode step of a decoder LLM on a group of GPUs, and its memory.

Prefill of I prompt tokens multiplies every weight with I tokens at once: compute-heavy.
A decode step produces one token for each of B running sequences: it reads every weight once
(the experts the batch routes to, for MoE) and each sequence's whole KV cache, and does
2 · active parameters FLOPs per token. At batch 1 the reads dominate; at large batch the
multiplies do. Tensor parallelism (T GPUs) splits weights, KV heads and FLOPs T ways and adds
two all-reduces of the activations per layer; pipeline parallelism (P stages) splits the
layers, and a token passes the P stages one after another. Expert parallelism (E ranks, see
:mod:`perdollar.predict.llm_serving.expert_parallel`) splits a MoE model's routed experts E ways
and runs attention on E/T data-parallel groups of T ranks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import DEFAULT_EFFICIENCY, ServingEfficiency
from perdollar.predict.llm_serving.expert_parallel import expert_exchange_s, routed_expert_params
from perdollar.predict.llm_serving.formats import ServingFormat, peak_tflops
from perdollar.predict.params import ModelParams
from perdollar.workload.llm.architecture import DecoderArchitecture

GIB = 1024**3
# vLLM and TensorRT-LLM page the KV cache in blocks (vLLM's default is 16 tokens): a sequence
# holds whole blocks.
KV_BLOCK_TOKENS = 16


@dataclass(frozen=True, slots=True)
class GroupShape:
    """How one replica is laid over GPUs: T-way tensor and P-way pipeline parallel, and for a MoE
    model E-way expert parallel (1: the experts split as tensor parallelism splits them)."""

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1

    @property
    def attention_data_parallel(self) -> int:
        """Groups of T ranks that run attention on their own sequences (E/T when E exceeds T)."""
        return max(self.expert_parallel // self.tensor_parallel, 1)

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.attention_data_parallel * self.pipeline_parallel

    @property
    def expert_split(self) -> int:
        """GPUs one routed expert's share is divided by: E ranks of whole experts, or T slices, per stage."""
        ranks = self.expert_parallel if self.expert_parallel > 1 else self.tensor_parallel
        return ranks * self.pipeline_parallel

    @property
    def dense_split(self) -> int:
        """GPUs the rest of the weights (attention, dense and shared MLPs, embeddings) are divided by."""
        return self.tensor_parallel * self.pipeline_parallel


@dataclass(frozen=True, slots=True)
class StepTime:
    seconds: float
    memory_s: float
    compute_s: float
    communication_s: float
    overhead_s: float
    proposer_s: float = 0.0  # speculative decoding's draft passes before the verify step

    @property
    def bottleneck(self) -> str:
        if self.communication_s > max(self.memory_s, self.compute_s):
            return "communication"
        return "memory-bandwidth" if self.memory_s >= self.compute_s else "compute"


def kv_bytes_per_token(arch: DecoderArchitecture, fmt: ServingFormat) -> float:
    """Bytes one token leaves in the KV cache, over all layers and KV heads."""
    return arch.kv_elements_per_token * fmt.kv_bytes


def kv_bytes_per_token_per_gpu(
    arch: DecoderArchitecture, fmt: ServingFormat, shape: GroupShape, context: float | None = None
) -> float:
    """Cache bytes per token of a sequence on one GPU; over a ``context`` of that many tokens,
    sliding-window layers keep only their window, so a token costs less on average."""
    layers_per_stage = math.ceil(arch.num_layers / shape.pipeline_parallel)
    if arch.is_mla:
        # The compressed latent and the rotary key are one per token, not per head: every
        # tensor-parallel rank keeps all of it (as vLLM and SGLang do).
        per_layer = float(arch.kv_elements_per_layer)
    else:
        # KV heads split over tensor-parallel ranks; with more ranks than KV heads each rank keeps one.
        per_layer = 2.0 * math.ceil(arch.num_key_value_heads / shape.tensor_parallel) * arch.head_dim
    per_token = layers_per_stage * per_layer * fmt.kv_bytes
    if context is None or not arch.sliding_layers or context <= arch.sliding_window:
        return per_token
    return per_token * arch.kv_elements(context) / (context * arch.kv_elements_per_token)


def _embedding_bytes(fmt: ServingFormat) -> float:
    # Embeddings and the LM head stay 16-bit in every quantised format but GGUF's.
    return fmt.weight_bytes if fmt.quantised_embeddings else 2.0


def weight_bytes_per_gpu(arch: DecoderArchitecture, fmt: ServingFormat, shape: GroupShape) -> float:
    """Weights held by each GPU of the group."""
    outer = arch.embedding_params + arch.lm_head_params
    routed = routed_expert_params(arch)
    body = (arch.total_params - outer - routed) * fmt.weight_bytes
    experts = routed * fmt.expert_weight_bytes
    return (body + outer * _embedding_bytes(fmt)) / shape.dense_split + experts / shape.expert_split


def kv_cache_bytes_per_gpu(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> float:
    """Memory left for the KV cache on each GPU (negative: the weights do not fit)."""
    usable = accelerator.memory_gib * GIB * efficiency.memory_utilisation - efficiency.reserve_gib * GIB
    return usable - weight_bytes_per_gpu(arch, fmt, shape)


def max_concurrent_sequences(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    tokens_per_sequence: int,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
    *,
    shared_prefix_tokens: int = 0,
) -> int:
    """Sequences of ``tokens_per_sequence`` (prompt + output) whose KV cache fits beside the weights.

    ``shared_prefix_tokens`` of every prompt are cached once (prefix caching) and shared by every
    sequence on a rank; each attention data-parallel group holds its own sequences.
    """
    free = kv_cache_bytes_per_gpu(arch, fmt, accelerator, shape, efficiency)
    blocks = math.ceil(tokens_per_sequence / KV_BLOCK_TOKENS)
    held = blocks * KV_BLOCK_TOKENS
    per_token = kv_bytes_per_token_per_gpu(arch, fmt, shape, context=held)
    # Only whole blocks are shared: a partly shared block is copied on write.
    shared_blocks = shared_prefix_tokens // KV_BLOCK_TOKENS
    free -= shared_blocks * KV_BLOCK_TOKENS * per_token
    per_sequence = (blocks - shared_blocks) * KV_BLOCK_TOKENS * per_token
    return max(0, int(free // per_sequence)) * shape.attention_data_parallel if free > 0 else 0


def _expected_experts(arch: DecoderArchitecture, tokens: float) -> float:
    """Experts a layer routes ``tokens`` tokens to, on average (uniform routing)."""
    if not arch.is_moe:
        return 1.0
    share = arch.experts_per_token / arch.num_experts
    return arch.num_experts * (1.0 - (1.0 - share) ** max(tokens, 1.0))


def _weights_read_per_gpu(
    arch: DecoderArchitecture, fmt: ServingFormat, shape: GroupShape, tokens: float
) -> float:
    held = weight_bytes_per_gpu(arch, fmt, shape)
    if not arch.tie_word_embeddings:  # the input embedding is gathered a row a token, not streamed
        held -= arch.embedding_params * _embedding_bytes(fmt) / shape.dense_split
    if not arch.is_moe:
        return held
    # Every rank's experts see the replica's tokens: under expert parallelism the dispatch brings them.
    idle = arch.num_experts - _expected_experts(arch, tokens)
    routed = routed_expert_params(arch)
    return held - routed * idle / arch.num_experts * fmt.expert_weight_bytes / shape.expert_split


def _allreduce_per_layer_s(
    accelerator: Accelerator, shape: GroupShape, tokens: float, hidden: int, eff: ServingEfficiency
) -> float:
    """Two all-reduces per layer (after attention and after the MLP) of 16-bit activations, ring."""
    ranks = shape.tensor_parallel
    if ranks <= 1:
        return 0.0
    link = (accelerator.interconnect_bandwidth_gbps or 32.0) * 1e9 / 2 * eff.allreduce_bandwidth  # one way
    message = tokens * hidden * 2.0
    # Decode's messages are a few KB to a few MB: at batch 1 the link's latency, not its bandwidth,
    # sets the time, so each link keeps its own.
    return 2 * (allreduce_latency_s(accelerator, eff) + 2 * (ranks - 1) / ranks * message / link)


def allreduce_latency_s(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    """The fixed cost of one all-reduce on the accelerator's link (NVLink/NVSwitch, xGMI or PCIe)."""
    link_name = accelerator.interconnect.lower()
    if "nvlink" in link_name or "nvswitch" in link_name or "ici" in link_name:
        return eff.allreduce_latency_nvlink_s
    if "infinity" in link_name or "xgmi" in link_name:
        return eff.allreduce_latency_xgmi_s
    return eff.allreduce_latency_pcie_s


def _in_flight_ceiling(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    """Bytes/s the chip's SMs can keep in flight when a kernel is latency-bound (Little's law).

    A matrix-vector kernel keeps only so many loads outstanding per SM; with HBM's long latency
    that caps the achieved bandwidth at SMs × clock × bytes per SM-cycle, well under the
    datasheet on big-HBM chips, while GDDR boards reach their (lower) datasheet figure first.
    """
    sms, clock_mhz = accelerator.sm_count, accelerator.boost_clock_mhz
    if not math.isfinite(eff.bytes_per_sm_cycle) or not sms or not clock_mhz:
        return math.inf
    return sms * clock_mhz * 1e6 * eff.bytes_per_sm_cycle


def stack_share(accelerator: Accelerator) -> float:
    """The share of the CUDA-fitted rates the chip's software stack reaches: the engines' fractions
    are fitted on NVIDIA rows, and ROCm reaches less of an AMD chip's datasheet (the same
    ``rocm_efficiency`` the training and request-serving models use, read from published
    comparisons, not fitted to serving rows)."""
    return ModelParams().rocm_efficiency if accelerator.software_stack == "rocm" else 1.0


def _bandwidth(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    share = eff.weight_only_bandwidth if fmt.weight_only else eff.bandwidth
    achieved = min(accelerator.memory_bandwidth_gbps * 1e9 * share, _in_flight_ceiling(accelerator, eff))
    return achieved * stack_share(accelerator)


def _kv_bandwidth(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    datasheet_share = accelerator.memory_bandwidth_gbps * 1e9 * eff.kv_bandwidth
    return min(datasheet_share, _in_flight_ceiling(accelerator, eff)) * stack_share(accelerator)


def _flops_rate(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    peak = peak_tflops(accelerator, fmt)
    if not peak:
        raise ValueError(f"{accelerator.key} cannot run {fmt.name}")
    return peak * 1e12 * eff.compute * stack_share(accelerator)


def _stage_time(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    eff: ServingEfficiency,
    *,
    tokens: float,
    bytes_read: float,
    attention_flops: float,
    kv_bytes: float = 0.0,
) -> StepTime:
    """One pass of ``tokens`` tokens through one pipeline stage, times the P stages in turn.

    A layer runs its matrix products and its attention as separate kernels, one after the other:
    a matrix product streams its weights while it multiplies (the longer of the two counts), and
    attention streams the KV cache while it multiplies queries with it. The two do not overlap.
    """
    stages = shape.pipeline_parallel
    layers = math.ceil(arch.num_layers / stages)
    rate = _flops_rate(accelerator, fmt, eff)
    weights_s = bytes_read / _bandwidth(accelerator, fmt, eff)
    matmul_s = 2.0 * arch.active_params * tokens / shape.gpus / rate
    kv_s = kv_bytes / _kv_bandwidth(accelerator, eff)
    attention_s = attention_flops / shape.gpus / rate
    communication = _communication_per_stage_s(arch, fmt, accelerator, shape, tokens, eff)
    overhead = layers * eff.step_overhead_s_per_layer
    stage = max(weights_s, matmul_s) + max(kv_s, attention_s) + communication + overhead
    # The engine's host time is paid once a step, not once a layer or stage.
    return StepTime(
        stage * stages + eff.step_overhead_s,
        (weights_s + kv_s) * stages,
        (matmul_s + attention_s) * stages,
        communication * stages,
        overhead * stages + eff.step_overhead_s,
    )


def _communication_per_stage_s(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    tokens: float,
    eff: ServingEfficiency,
) -> float:
    """Tensor-parallel all-reduces of every layer of a stage; under expert parallelism a MoE layer's
    MLP all-reduce gives way to its dispatch and combine."""
    layers = math.ceil(arch.num_layers / shape.pipeline_parallel)
    # Each attention data-parallel group all-reduces its own share of the tokens.
    group_tokens = tokens / shape.attention_data_parallel
    per_layer = _allreduce_per_layer_s(accelerator, shape, group_tokens, arch.hidden_size, eff)
    if shape.expert_parallel <= 1:
        return layers * per_layer
    moe_layers = math.ceil(arch.moe_layers / shape.pipeline_parallel)
    exchange = expert_exchange_s(
        arch, fmt, accelerator, shape.expert_parallel, tokens, link_efficiency=eff.allreduce_bandwidth,
        latency_s=allreduce_latency_s(accelerator, eff),
    )  # fmt: skip
    return layers * per_layer + moe_layers * (exchange - per_layer / 2)


def prefill_time(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    prompt_tokens: int,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
    sequences: int = 1,
    *,
    cached_tokens: int = 0,
) -> StepTime:
    """``sequences`` prompts of ``prompt_tokens`` each, prefilled in one pass: the time to their first
    tokens (one request's alone by default). The first ``cached_tokens`` of each prompt are read
    from the prefix cache and not computed again."""
    # Causal attention: each of I tokens attends to the ones before it in its own prompt, 2·2·d FLOPs
    # per pair and layer; prompts batched together never attend to each other. The C cached tokens'
    # pairs among themselves (C² of the I²) are not computed again.
    pairs = prompt_tokens**2 - cached_tokens**2
    per_prompt = 2.0 * arch.num_layers * arch.num_attention_heads * arch.head_dim * pairs
    attention = sequences * per_prompt
    tokens = (prompt_tokens - cached_tokens) * sequences
    bytes_read = _weights_read_per_gpu(arch, fmt, shape, tokens)
    return _stage_time(
        arch,
        fmt,
        accelerator,
        shape,
        efficiency,
        tokens=tokens,
        bytes_read=bytes_read,
        attention_flops=attention,
    )


def decode_step_time(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    batch: float,
    context_tokens: float,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
    *,
    positions: int = 1,
) -> StepTime:
    """One token for each of ``batch`` sequences holding ``context_tokens`` tokens each on average.

    ``positions``: tokens multiplied per sequence in the step (a speculative verify step's k+1);
    the weights and each sequence's cache are still read once.
    """
    per_rank = batch / shape.attention_data_parallel
    kv = per_rank * context_tokens * kv_bytes_per_token_per_gpu(arch, fmt, shape, context=context_tokens)
    bytes_read = _weights_read_per_gpu(arch, fmt, shape, batch * positions)
    attention = 4.0 * arch.num_layers * arch.num_attention_heads * arch.head_dim * context_tokens * batch
    attention *= positions
    return _stage_time(
        arch,
        fmt,
        accelerator,
        shape,
        efficiency,
        tokens=batch * positions,
        bytes_read=bytes_read,
        kv_bytes=kv,
        attention_flops=attention,
    )
