"""Context and expert parallelism: what each splits, and the traffic each adds to a micro-batch.

Context parallelism (Megatron-Core's ``--context-parallel-size``, ring attention) gives each of c
ranks s/c tokens of every sequence (in two load-balanced halves): every matrix product and saved
activation shrinks c-fold, while attention still sees all s keys, so its work per rank is 1/c of
the whole sequence's, c times that of an s/c-token sequence. The keys and values travel round the
ring: each rank sends its K and V chunk (s/c tokens × 2 × KV width) c − 1 times in the forward,
and in the backward the chunk again plus its gradient. Megatron runs each step of the ring beside
the attention block it feeds, so the plan's tensor-parallel overlap share of it hides. The
gradients of the c ranks' copies of the weights are reduced together with the data-parallel
ones (the gradient group is data parallel × context parallel).

Expert parallelism (``--expert-model-parallel-size``) spreads a MoE layer's routed experts over e
of the data-parallel ranks: each holds num_experts/e experts, and each token's hidden state is
sent to the ranks holding its k experts and back (dispatch and combine all-to-alls), twice in the
forward and twice in the backward (again in a recomputed forward). An all-to-all over e ranks
sends (e − 1)/e of the buffer; inside a host over its NVLink, across hosts through the NICs the
host's ranks share. The all-to-alls wait on the router and the experts wait on them: none hidden.
Expert weights and their states are split e ways where sharding does not already split them further.
"""

from __future__ import annotations

import math

from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.workload.llm.architecture import DecoderArchitecture

ACTIVATION_BYTES = 2.0  # bf16 hidden states, keys and values on the wire


def context_ring_bytes(arch: DecoderArchitecture, plan: TrainingPlan, seq_len: int) -> float:
    """Bytes one rank sends round the ring for one layer and micro-batch, forward and backward."""
    cp = plan.context_parallel
    if cp < 2:
        return 0.0
    chunk = plan.micro_batch * seq_len / cp * 2 * arch.kv_dim * ACTIVATION_BYTES / plan.tensor_parallel
    # forward: K and V (c − 1) times; backward: K and V again, and their gradients
    return 3 * (cp - 1) * chunk


def context_ring_seconds(
    arch: DecoderArchitecture, plan: TrainingPlan, seq_len: int, layers: int, link: cx.Link
) -> float:
    """One micro-batch's ring traffic on a stage of ``layers`` layers, before any of it hides."""
    if plan.context_parallel < 2:
        return 0.0
    steps = 3 * (plan.context_parallel - 1)
    per_layer = context_ring_bytes(arch, plan, seq_len) / link.bandwidth + steps * link.latency
    if plan.activation_checkpointing:  # the recomputed forward circulates K and V once more
        per_layer *= 4 / 3
    return layers * per_layer


def expert_all_to_all_bytes(arch: DecoderArchitecture, plan: TrainingPlan, tokens: float) -> float:
    """Bytes one rank sends in one dispatch (or combine) all-to-all of one MoE layer."""
    buffer = tokens * arch.experts_per_token * arch.hidden_size * ACTIVATION_BYTES
    return cx.all_to_all_bytes(buffer, plan.expert_parallel)


def expert_all_to_all_seconds(
    arch: DecoderArchitecture, plan: TrainingPlan, seq_len: int, layers: int, link: cx.Link
) -> float:
    """One micro-batch's dispatch and combine all-to-alls over a stage's MoE layers."""
    ep = plan.expert_parallel
    if ep < 2 or not arch.is_moe:
        return 0.0
    tokens = plan.micro_batch * seq_len / plan.context_parallel
    moe_layers = math.ceil(arch.moe_layers * layers / arch.num_layers)
    count = 4 + (2 if plan.activation_checkpointing else 0)
    one = expert_all_to_all_bytes(arch, plan, tokens) / link.bandwidth + (ep - 1) * link.latency
    return moe_layers * count * one


def expert_link(plan: TrainingPlan, gpus_per_node: int, intra: cx.Link, inter: cx.Link) -> cx.Link:
    """NVLink when the expert-parallel ranks share a host; else the host's NICs, shared by its ranks."""
    if plan.tensor_parallel * plan.expert_parallel <= gpus_per_node:
        return intra
    sharing = max(gpus_per_node // plan.tensor_parallel, 1)
    return cx.Link(min(intra.bandwidth, inter.bandwidth / sharing), inter.latency, inter.name)


def context_link(plan: TrainingPlan, gpus_per_node: int, intra: cx.Link, inter: cx.Link) -> cx.Link:
    """NVLink when the ring's ranks share a host (placed next to tensor parallel); else the network."""
    if plan.tensor_parallel * plan.context_parallel <= gpus_per_node:
        return intra
    sharing = max(gpus_per_node // (plan.tensor_parallel * plan.context_parallel), 1)
    return cx.Link(min(intra.bandwidth, inter.bandwidth / sharing), inter.latency, inter.name)


def expert_params_share(arch: DecoderArchitecture) -> float:
    """Share of the model's parameters in routed experts (what expert parallelism splits)."""
    if not arch.is_moe:
        return 0.0
    routed = arch.params_by_role().get("routed_experts", 0)
    return routed / max(arch.total_params, 1)


def expert_divisor(plan: TrainingPlan, shard: int) -> float:
    """How many ways a routed expert's state is split: e, or the data-parallel sharding if larger."""
    return float(max(plan.expert_parallel, shard))
