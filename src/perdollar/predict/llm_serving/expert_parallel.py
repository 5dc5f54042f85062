"""Expert parallelism for serving a mixture-of-experts model: where the experts live and what
moving tokens to them costs.

With E expert-parallel ranks each GPU holds num_experts / E whole routed experts instead of a
1/T slice of every expert. Attention stays tensor parallel over T ranks; when E > T the E/T
groups of T ranks run attention data parallel, each on its own share of the running sequences
and their KV cache (SGLang's DP attention, vLLM's data parallel + expert parallel), so an MLA
cache, which every tensor-parallel rank would otherwise copy whole, is held once. A MoE layer
then sends each token's activations to the ranks of its k experts (dispatch) and brings the
weighted outputs back (combine): two all-to-alls instead of the MLP's all-reduce, timed with the
rest of a MoE layer in :mod:`perdollar.predict.llm_serving.moe_layer`.
"""

from __future__ import annotations

from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.workload.llm.architecture import DecoderArchitecture

# Combine returns 16-bit expert outputs; dispatch sends fp8 activations where the matrix products
# run in fp8 (DeepEP's and vLLM's fp8 dispatch), 16-bit ones otherwise.
COMBINE_BYTES = 2.0


def expert_parallel_problem(arch: DecoderArchitecture, tensor_parallel: int, expert_parallel: int) -> str:
    """Why ``expert_parallel`` ranks cannot split ``arch``'s routed experts ('' when they can)."""
    if expert_parallel <= 1:
        return ""
    if not arch.is_moe:
        return f"expert parallel {expert_parallel} needs a mixture-of-experts model; {arch.name} is dense"
    if arch.num_experts % expert_parallel:
        return (
            f"expert parallel {expert_parallel} does not divide the model's {arch.num_experts} routed "
            "experts (each rank holds whole experts)"
        )
    if expert_parallel % tensor_parallel:
        return (
            f"expert parallel {expert_parallel} is not a multiple of tensor parallel {tensor_parallel} "
            "(the expert-parallel group is the tensor-parallel ranks times the attention data-parallel ranks)"
        )
    return ""


def routed_expert_params(arch: DecoderArchitecture) -> int:
    return arch.params_by_role().get("routed_experts", 0) if arch.is_moe else 0


def dispatch_bytes(fmt: ServingFormat) -> float:
    return 1.0 if fmt.compute_dtype in ("fp8", "fp4") else 2.0


def expert_exchange_bytes_per_gpu(
    arch: DecoderArchitecture, fmt: ServingFormat, expert_parallel: int, tokens: float
) -> float:
    """Bytes one GPU sends in one MoE layer's dispatch and combine for ``tokens`` tokens of the replica.

    Each GPU routes its 1/E of the tokens; every token goes to k experts, and the copies whose
    expert lives on another rank cross the link (all-to-all: (E−1)/E of them, uniform routing).
    """
    per_rank = tokens / expert_parallel * arch.experts_per_token * arch.hidden_size
    sent = per_rank * (dispatch_bytes(fmt) + COMBINE_BYTES)
    return cx.all_to_all_bytes(sent, expert_parallel)
