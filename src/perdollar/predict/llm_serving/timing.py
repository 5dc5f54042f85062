"""Time of one prefill and one decode step of a decoder LLM on a group of GPUs, and its memory.

Prefill of I prompt tokens multiplies every weight with I tokens at once: compute-heavy.
A decode step produces one token for each of B running sequences: it reads every weight once
(the experts the batch routes to, for MoE) and each sequence's whole KV cache, and does
2 · active parameters FLOPs per token. At batch 1 the reads dominate; at large batch the
multiplies do. Tensor parallelism (T GPUs) splits weights, KV heads and FLOPs T ways and adds
two all-reduces of the activations per layer; pipeline parallelism (P stages) splits the
layers, and a token passes the P stages one after another. Expert parallelism (E ranks, see
:mod:`perdollar.predict.llm_serving.expert_parallel`) splits a MoE model's routed experts E ways
and runs attention on E/T data-parallel groups of T ranks. A MoE model's layers go through
:mod:`perdollar.predict.llm_serving.moe_layer` (routing, grouped expert products, the busiest rank,
the exchange); a dense model's through the roofline below alone.
"""

from __future__ import annotations

import math

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import DEFAULT_EFFICIENCY, ServingEfficiency
from perdollar.predict.llm_serving.expert_parallel import routed_expert_params
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.moe_stage import moe_stage_time
from perdollar.predict.llm_serving.rates import (
    allreduce_latency_s,
    flops_rate,
    kv_bandwidth,
    stack_share,
    streaming_bandwidth,
    tensor_parallel_collectives_s,
    weight_bandwidth,
)
from perdollar.predict.llm_serving.shape import GroupShape, StepTime
from perdollar.workload.llm.architecture import DecoderArchitecture

# Kept importable from here, where the rest of the serving model finds them.
__all__ = ["DEFAULT_EFFICIENCY", "GroupShape", "ServingEfficiency", "StepTime", "allreduce_latency_s",
           "stack_share"]  # fmt: skip

GIB = 1024**3
# vLLM and TensorRT-LLM page the KV cache in blocks (vLLM's default is 16 tokens): a sequence
# holds whole blocks.
KV_BLOCK_TOKENS = 16


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
    experts = routed * fmt.expert_weight_bytes
    if shape.ffn_split != shape.dense_split:
        roles = arch.params_by_role()
        ffn = roles.get("dense_mlp", 0) + roles.get("shared_experts", 0)
        rest = (arch.total_params - outer - routed - ffn) * fmt.weight_bytes + outer * _embedding_bytes(fmt)
        return (
            rest / shape.dense_split + ffn * fmt.weight_bytes / shape.ffn_split + experts / shape.expert_split
        )
    body = (arch.total_params - outer - routed) * fmt.weight_bytes
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


def _weights_read_per_gpu(
    arch: DecoderArchitecture, fmt: ServingFormat, shape: GroupShape, tokens: float
) -> float:
    held = weight_bytes_per_gpu(arch, fmt, shape)
    if not arch.tie_word_embeddings:  # the input embedding is gathered a row a token, not streamed
        held -= arch.embedding_params * _embedding_bytes(fmt) / shape.dense_split
    if not arch.is_moe:
        return held
    # The routed experts and the router are read by the MoE layer model (moe_layer.py), the touched
    # experts only.
    routed = routed_expert_params(arch) * fmt.expert_weight_bytes / shape.expert_split
    router = arch.params_by_role().get("router", 0) * fmt.weight_bytes / shape.dense_split
    return held - routed - router


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
    group_tokens: float | None = None,
    score_elements: float = 0.0,
) -> StepTime:
    """One pass of ``tokens`` tokens through one pipeline stage, times the P stages in turn.

    A layer runs its matrix products and its attention as separate kernels, one after the other:
    a matrix product streams its weights while it multiplies (the longer of the two counts), and
    attention streams the KV cache while it multiplies queries with it. The two do not overlap.
    A MoE model's routed experts and router are not in ``bytes_read``: :func:`moe_stage_time`.
    ``group_tokens``: of ``tokens``, those the busiest attention data-parallel group multiplies
    through its attention (None: an even share of each group).
    """
    if arch.is_moe:
        return moe_stage_time(arch, fmt, accelerator, shape, eff, tokens=tokens, bytes_read=bytes_read,
                               attention_flops=attention_flops, kv_bytes=kv_bytes,
                               group_tokens=group_tokens)  # fmt: skip
    stages = shape.pipeline_parallel
    layers = math.ceil(arch.num_layers / stages)
    rate = flops_rate(accelerator, fmt, eff)
    weights_s = bytes_read / weight_bandwidth(accelerator, fmt, eff)
    # The dense engines' compute fractions were fitted with the input embedding counted among the
    # products (2 FLOPs a token for every parameter): dense figures keep that count.
    matmul_s = 2.0 * (arch.active_params + arch.lookup_params) * tokens / shape.gpus / rate
    kv_s = kv_bytes / kv_bandwidth(accelerator, eff)
    attention_s = attention_flops / shape.gpus / rate
    # Unfused attention's scores, written and read back by separate kernels beside its products.
    score_bytes = score_elements * eff.score_bytes_per_element / shape.gpus
    scores_s = score_bytes / streaming_bandwidth(accelerator, eff)
    communication = tensor_parallel_collectives_s(arch, accelerator, shape, tokens, eff)
    overhead = layers * eff.step_overhead_s_per_layer
    stage = max(weights_s, matmul_s) + max(kv_s, attention_s) + scores_s + communication + overhead
    # The engine's host time is paid once a step, not once a layer or stage.
    return StepTime(
        stage * stages + eff.step_overhead_s,
        (weights_s + kv_s + scores_s) * stages,
        (matmul_s + attention_s) * stages,
        communication * stages,
        overhead * stages + eff.step_overhead_s,
    )


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
    # A prompt is prefilled whole by one attention data-parallel group: over every group as if each
    # ran the busiest one's prompts, as a decode step counts their sequences.
    busiest = busiest_group_sequences(sequences, shape)
    attention = busiest * shape.attention_data_parallel * per_prompt
    tokens = (prompt_tokens - cached_tokens) * sequences
    bytes_read = _weights_read_per_gpu(arch, fmt, shape, tokens)
    # One score per causal pair (half of I²), head and layer, where attention is not fused.
    scores = sequences * arch.num_layers * arch.num_attention_heads * pairs / 2.0
    unpipelined = _stage_time(
        arch,
        fmt,
        accelerator,
        shape,
        efficiency,
        tokens=tokens,
        bytes_read=bytes_read,
        attention_flops=attention,
        group_tokens=busiest * (prompt_tokens - cached_tokens),
        score_elements=scores if efficiency.score_bytes_per_element else 0.0,
    )
    share = prompt_pipeline_share(tokens, shape.pipeline_parallel, efficiency)
    if share == 1.0:
        return unpipelined
    return StepTime(
        unpipelined.seconds * share,
        unpipelined.memory_s * share,
        unpipelined.compute_s * share,
        unpipelined.communication_s * share,
        unpipelined.overhead_s * share,
    )


def prompt_pipeline_share(tokens: float, stages: int, eff: ServingEfficiency) -> float:
    """The share of a prompt's stage-after-stage time it takes when the engine splits it into
    micro-batches that layer-split GPUs work on at once (1: not pipelined).

    Each batch of ``prompt_batch_tokens`` is cut into u micro-batches; the P stages pass them on
    as a pipeline, u + P - 1 micro-batch steps of one stage each rather than u · P, and the
    pipeline drains at the end of each batch (llama.cpp's decode call returns its logits).
    """
    ubatch, batch = eff.prompt_ubatch_tokens, eff.prompt_batch_tokens
    if stages <= 1 or ubatch <= 0 or tokens <= ubatch:
        return 1.0
    batch = max(batch, ubatch)
    whole, rest = divmod(math.ceil(tokens), batch)
    counts = [math.ceil(batch / ubatch)] * whole + ([math.ceil(rest / ubatch)] if rest else [])
    micro_batches = sum(counts)
    return sum(count + stages - 1 for count in counts) / (micro_batches * stages)


def busiest_group_sequences(batch: float, shape: GroupShape) -> float:
    """Sequences on the busiest attention data-parallel group: whole sequences, so with fewer
    sequences than groups some groups idle while one still runs a sequence."""
    groups = shape.attention_data_parallel
    if groups <= 1:
        return batch
    return float(math.ceil(batch / groups - 1e-9))


def busiest_group_prompts(prompts: float, shape: GroupShape) -> float:
    """Prompts the busiest attention data-parallel group prefills in an iteration that starts
    ``prompts`` on average. Each prompt is prefilled whole by the one group that holds its
    sequence, and every group waits for the others at each MoE layer's exchange: up to one prompt
    an iteration, all of it lands on one group while the rest wait; up to one a group, the busiest
    holds one; beyond that they spread evenly."""
    groups = shape.attention_data_parallel
    if groups <= 1:
        return prompts
    return min(prompts, max(1.0, prompts / groups))


def decode_attention_flops(arch: DecoderArchitecture) -> float:
    """Attention FLOPs of one decoded position against one cached token, over all layers.

    Multi-head latent attention decodes with its up-projections absorbed (DeepSeek-V2 paper, §2.1.2;
    vLLM's and SGLang's MLA decode kernels): each head scores the cached latent and rotary key
    (kv_lora_rank + qk_rope_head_dim wide) and sums the latent (kv_lora_rank wide), rather than
    keys and values of head_dim; every other attention multiplies head_dim-wide keys and values.
    """
    if arch.is_mla:
        width = 2 * arch.kv_lora_rank + arch.qk_rope_head_dim
        return 2.0 * arch.num_layers * arch.num_attention_heads * width
    return 4.0 * arch.num_layers * arch.num_attention_heads * arch.head_dim


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
    per_rank = busiest_group_sequences(batch, shape)
    kv = per_rank * context_tokens * kv_bytes_per_token_per_gpu(arch, fmt, shape, context=context_tokens)
    bytes_read = _weights_read_per_gpu(arch, fmt, shape, batch * positions)
    # Over every group as if each ran the busiest one's sequences: the stage divides by all GPUs.
    attention = decode_attention_flops(arch) * context_tokens * per_rank * shape.attention_data_parallel
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
        group_tokens=per_rank * positions,
    )
