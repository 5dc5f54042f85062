"""The limits a model's shape puts on how it can be split over GPUs, as the engines enforce them.

Tensor parallelism splits attention by heads, so its degree must divide the attention heads
(vLLM, TensorRT-LLM and Megatron-LM all refuse otherwise). Key/value heads are split the same
way; with fewer KV heads than ranks, vLLM keeps a copy of a KV head on each of ``tp / kv`` ranks
(so ``tp`` must be a multiple of the KV heads), while Megatron-Core's training refuses any degree
that does not divide its query groups (the KV heads). Pipeline parallelism gives each stage at
least one layer. A sequence, prompt and generated tokens together, fits the context the model
was built for (``max_position_embeddings``).

Each function returns why the split is impossible, or ``''`` when it is possible.
"""

from __future__ import annotations

from perdollar.workload.llm.architecture import DecoderArchitecture


def tensor_parallel_problem(arch: DecoderArchitecture, tensor_parallel: int, *, serving: bool) -> str:
    """Why ``tensor_parallel`` ranks cannot split ``arch``'s attention ('' when they can).

    ``serving``: KV heads replicate when there are more ranks than KV heads (vLLM); in training
    (Megatron-Core) the ranks must divide the KV heads.
    """
    heads, kv_heads = arch.num_attention_heads, arch.num_key_value_heads
    if tensor_parallel <= 1:
        return ""
    if heads % tensor_parallel:
        return (
            f"tensor parallel {tensor_parallel} does not divide the model's {heads} attention heads "
            f"(engines split attention by whole heads; use {_divisors_text(heads, tensor_parallel)})"
        )
    if kv_heads % tensor_parallel == 0:
        return ""
    if serving:
        if tensor_parallel % kv_heads == 0:
            return ""  # each KV head is copied onto tensor_parallel / kv_heads ranks
        return (
            f"tensor parallel {tensor_parallel} neither divides nor is a multiple of the model's "
            f"{kv_heads} KV heads (vLLM splits KV heads, or copies each onto a whole number of ranks)"
        )
    return (
        f"tensor parallel {tensor_parallel} does not divide the model's {kv_heads} KV heads "
        f"(Megatron-Core's training splits them, it does not copy them; use "
        f"{_divisors_text(kv_heads, tensor_parallel)})"
    )


def pipeline_parallel_problem(arch: DecoderArchitecture, pipeline_parallel: int) -> str:
    """Why ``pipeline_parallel`` stages cannot hold ``arch``'s layers ('' when they can)."""
    if pipeline_parallel > arch.num_layers:
        return (
            f"pipeline parallel {pipeline_parallel} exceeds the model's {arch.num_layers} layers "
            "(each stage holds at least one layer)"
        )
    return ""


def context_problem(arch: DecoderArchitecture, input_tokens: int, output_tokens: int) -> str:
    """Why a request of ``input_tokens`` + ``output_tokens`` does not fit the model's context."""
    total = input_tokens + output_tokens
    if total > arch.max_position_embeddings:
        return (
            f"{input_tokens:,} input + {output_tokens:,} output tokens = {total:,} exceed the "
            f"{arch.max_position_embeddings:,}-token context of {arch.name} (max_position_embeddings)"
        )
    return ""


def _divisors_text(count: int, above: int) -> str:
    """The tensor-parallel degrees that divide ``count``, near ``above``: "1, 2, 3, 4, 6 or 12"."""
    options = [d for d in range(1, count + 1) if count % d == 0 and d <= max(above * 2, 8)]
    return ", ".join(str(d) for d in options[:-1]) + f" or {options[-1]}" if len(options) > 1 else "1"
