"""A mixture-of-experts layer as a trainer runs it: what the traced dense stand-in leaves out.

The traced step stands each MoE layer in by the dense MLP a token sees (its k experts side by
side, :mod:`perdollar.workload.llm.meta_model`): one large matrix product per projection at the
dense GEMMs' rate. A trainer runs it otherwise, per micro-batch and per MoE layer:

- **routing**: the router's product (hidden × experts a token), and the permute and un-permute
  copies of each token's hidden state into expert order and back, forward, backward (which moves
  the gradients the same way) and again in a recomputed forward;
- **grouped expert products**: each local expert multiplies only the rows routed to it, tokens ×
  k × E_p / E a rank on average (E_p expert-parallel ranks, E experts); the last tile of each is
  padding (:func:`~perdollar.predict.expert_load.tile_efficiency`, the serving model's);
  and under expert parallelism the rank that receives the most rows sets the layer's time (the
  serving model's normal rank loads, :func:`~perdollar.predict.expert_load.busiest_of`
  standard deviations above the mean, with a training run's own expert skew,
  :data:`TRAINING_EXPERT_LOAD_SKEW`); ``grouped_gemm_efficiency`` is the grouped kernels' rate
  against the dense GEMMs', fitted;
- **exchange**: dispatch and combine all-to-alls, forward and backward (and again in a recomputed
  forward), the peers on the host over its GPU link, the rest through the host's NICs, which all
  its GPUs share; the slower of the two sets the time, and the busiest rank receives its load
  times the mean. An all-to-all dispatcher sends every routed copy; DeepEP's sends a token once
  to each rank holding any of its experts and once to each other host reached, which forwards it
  to its ranks over the GPU link (:func:`dispatch_volumes`). The framework hides what
  :data:`EXPERT_EXCHANGE_OVERLAP` says it does by default; a plan that overlaps the exchange
  (Megatron-Core's ``--overlap-moe-expert-parallel-comm``) hides it behind another micro-batch's
  compute on the stage, never more than that compute lasts.

The gradients of the experts are reduced over the expert-data-parallel group (the ranks holding the
same experts: the gradient group ÷ E_p), the rest over the whole gradient group (in
:mod:`perdollar.predict.llm.step`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.expert_load import busiest_of, tile_efficiency
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.workload.llm.architecture import DecoderArchitecture

ACTIVATION_BYTES = 2.0  # bf16 hidden states and their gradients
# Share of the HBM datasheet bandwidth the permute and un-permute copies reach (the streaming share
# the optimizer step uses, perdollar.predict.llm.optimizers.STREAMING_BANDWIDTH_SHARE's order).
COPY_BANDWIDTH_SHARE = 0.8
# Share of the expert-parallel all-to-alls each framework runs beside compute, as its documentation
# states it. Megatron-Core overlaps them only under --overlap-moe-expert-parallel-comm (batch-level
# overlap of one micro-batch's exchange with another's compute, MCore 0.14), off by default, and
# its DeepEP/HybridEP dispatchers run the all-to-all on their own kernels, not beside compute; the
# default alltoall dispatcher waits for it. torchtitan's default expert parallelism and its DeepEP
# path (torchtitan/distributed/deepep) likewise dispatch before the experts and combine after
# them. So none is hidden by default; a plan of a framework that overlaps would say so here.
EXPERT_EXCHANGE_OVERLAP: dict[str, float] = {"megatron": 0.0, "nemo": 0.0, "torchtitan": 0.0}
# Coefficient of variation of one expert's routed rows in dropless training with an auxiliary
# balancing loss. Read from the Megatron MoE model zoo's Qwen3-235B-A22B long-context runs on H100
# (yanring/Megatron-MoE-ModelZoo best_practice/qwen3/readme.md): at 16k tokens, EP 8 (16 experts a
# rank, 32k rows a rank), dropless routing reached 237 TFLOP/s per GPU against 295 with balance
# forced, a 1.245× step; with the experts and their exchange about 0.4 of that step, the busiest
# rank carries 1 + 0.245/0.4 ≈ 1.6 times the mean, z(8) = 1.42 standard deviations of a rank's load
# (0.43 of the mean) above it: an expert's own deviation is 0.43·√16 ≈ 1.7 of its mean.
# A run that forces balance (torchtitan's debug_moe_force_load_balance, Megatron's
# --moe-router-force-load-balancing) has 0.
TRAINING_EXPERT_LOAD_SKEW = 1.7


@dataclass(frozen=True, slots=True)
class MoEStageTimes:
    """Seconds one micro-batch's MoE layers add on the busiest stage, by part, and the facts behind them."""

    routing_s: float = 0.0  # router product, permute and un-permute copies
    grouped_gemm_s: float = 0.0  # the experts' grouped products beyond the dense stand-in's time
    all_to_all_s: float = 0.0  # dispatch and combine left once the framework's overlap hides its share
    rows_per_expert: float = 0.0  # rows each local expert multiplies on the busiest rank
    tile_efficiency: float = 1.0
    busiest_load: float = 1.0  # the busiest expert-parallel rank's rows over the mean
    exchange_spans_hosts: bool = False

    @property
    def total(self) -> float:
        return self.routing_s + self.grouped_gemm_s + self.all_to_all_s

    def to_dict(self) -> dict[str, float | bool]:
        return {
            "routing_s": self.routing_s,
            "grouped_gemm_s": self.grouped_gemm_s,
            "all_to_all_s": self.all_to_all_s,
            "rows_per_expert": self.rows_per_expert,
            "tile_efficiency": self.tile_efficiency,
            "busiest_load": self.busiest_load,
            "exchange_spans_hosts": self.exchange_spans_hosts,
        }


def local_tokens(plan: TrainingPlan, seq_len: int) -> float:
    """Tokens of one micro-batch a GPU routes: its sequences' chunk, split over tensor parallel
    (Megatron's sequence parallelism hands each tensor-parallel rank its own tokens)."""
    return plan.micro_batch * seq_len / plan.context_parallel / plan.tensor_parallel


def moe_layers_on_stage(arch: DecoderArchitecture, plan: TrainingPlan) -> int:
    return math.ceil(arch.moe_layers / plan.pipeline_parallel)


def busiest_load(
    arch: DecoderArchitecture, plan: TrainingPlan, tokens: float, skew: float = TRAINING_EXPERT_LOAD_SKEW
) -> float:
    """The busiest expert-parallel rank's rows over the mean (1 without expert parallelism): rank
    loads normal around the mean, their spread from the experts' own skew averaged over a rank's
    experts and from the finite rows it receives (the serving model's form)."""
    ep = plan.expert_parallel
    if ep <= 1:
        return 1.0
    experts_per_rank = arch.num_experts / ep
    rows = max(tokens * arch.experts_per_token, 1.0)
    return 1.0 + busiest_of(ep) * math.sqrt(skew**2 / experts_per_rank + 1.0 / rows)


def rows_per_local_expert(arch: DecoderArchitecture, plan: TrainingPlan, tokens: float, load: float) -> float:
    """Rows each of a rank's experts multiplies: its tokens' k copies, gathered from its E_p peers."""
    return tokens * arch.experts_per_token * plan.expert_parallel / arch.num_experts * load


def expert_flop_share(arch: DecoderArchitecture, seq_len: int) -> float:
    """Share of one MoE layer's forward FLOPs a token spends in its routed experts' products (the
    rest: attention's projections and scores, the shared experts and the router)."""
    if not arch.is_moe:
        return 0.0
    experts = 2.0 * arch.experts_per_token * arch.expert_params
    projections = 2.0 * (
        arch.attention_params_per_layer + arch.shared_expert_params + arch.router_params_per_layer
    )
    scores = 2.0 * arch.num_attention_heads * arch.head_dim * seq_len  # causal: half of 4·heads·dim·s
    return experts / (experts + projections + scores)


def share_reaching(experts: int, held: float, top_k: int) -> float:
    """Chance that a token's ``top_k`` distinct experts, drawn evenly from ``experts``, include at
    least one of the ``held`` experts of one rank or host."""
    held_whole = min(max(round(held), 0), experts)
    if top_k >= experts - held_whole + 1:
        return 1.0
    return 1.0 - math.comb(experts - held_whole, top_k) / math.comb(experts, top_k)


def dispatch_volumes(
    arch: DecoderArchitecture, plan: TrainingPlan, tokens: float, gpus_per_node: int
) -> tuple[float, float]:
    """(Bytes over the GPU link, bytes through the NICs) one rank sends in one dispatch.

    The expert layers are laid out on their own (Megatron-Core's parallel folding, Liu et al. 2025,
    arXiv 2504.14960; torchtitan's expert mesh): E_p consecutive ranks, a host's GPUs holding up to
    that many of them. An all-to-all dispatcher sends each routed copy to its expert's rank,
    across the NICs for the ranks on other hosts. DeepEP sends a token once to each other rank
    holding one of its experts; to another host, once through the NICs, and that host's receiving
    GPU forwards it over its GPU link to the host's other ranks that need it."""
    ep, k, experts = plan.expert_parallel, arch.experts_per_token, arch.num_experts
    per_host = max(min(gpus_per_node, ep), 1)
    row = arch.hidden_size * ACTIVATION_BYTES
    if plan.expert_dispatch != "deepep":
        copies = cx.all_to_all_bytes(tokens * k * row, ep)
        remote_share = (ep - per_host) / (ep - 1)
        return copies * (1.0 - remote_share), copies * remote_share
    rank_reached = share_reaching(experts, experts / ep, k)
    local_ranks = (per_host - 1) * rank_reached
    hosts = ep // per_host
    if hosts <= 1:
        return tokens * local_ranks * row, 0.0
    remote_hosts = (hosts - 1) * share_reaching(experts, experts / hosts, k)
    # the remote ranks reached, less the one of each host that receives over the NICs
    forwarded = (ep - per_host) * rank_reached - remote_hosts
    return tokens * (local_ranks + forwarded) * row, tokens * remote_hosts * row


def exchange_link_seconds(
    local_bytes: float, remote_bytes: float, gpus_per_node: int, intra: cx.Link, inter: cx.Link
) -> tuple[float, bool]:
    """(Seconds of one all-to-all, whether it leaves the host): both links carry their share at
    once and the slower sets the time; the NICs serve every GPU of the host at once."""
    local = local_bytes / intra.bandwidth
    if remote_bytes <= 0:
        return local + intra.latency, False
    nic_per_gpu = inter.bandwidth / max(gpus_per_node, 1)
    return max(local, remote_bytes / nic_per_gpu) + inter.latency, True


def moe_stage_times(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    plan: TrainingPlan,
    seq_len: int,
    *,
    expert_compute_s: float,
    stage_compute_s: float = 0.0,
    gemm_flops_per_s: float,
    gpus_per_node: int,
    intra: cx.Link,
    inter: cx.Link,
    grouped_gemm_efficiency: float = 1.0,
    load_skew: float = TRAINING_EXPERT_LOAD_SKEW,
) -> MoEStageTimes:
    """What one micro-batch's MoE layers on the busiest stage add to the traced dense stand-in.

    ``expert_compute_s``: the stand-in's time for the routed experts' products of those layers
    (forward, backward and any recompute); ``stage_compute_s``: the stage's compute that an
    overlapped exchange can run beside; ``gemm_flops_per_s``: the GEMMs' achieved rate, for the
    router's product."""
    if not arch.is_moe:
        return MoEStageTimes()
    layers = moe_layers_on_stage(arch, plan)
    tokens = local_tokens(plan, seq_len)
    # forward, the backward's two passes, and the recomputed forward under full checkpointing
    passes = 3 + (1 if plan.activation_checkpointing else 0)
    k, hidden = arch.experts_per_token, arch.hidden_size
    router = 2.0 * arch.router_params_per_layer * tokens * passes / gemm_flops_per_s
    # Permute reads each hidden state and writes its k copies; un-permute reads the k outputs and
    # writes their weighted sum. The backward moves the gradients back the same way, once.
    copied = hidden * ACTIVATION_BYTES * (2 + 2 * k) * tokens * (passes - 1)
    bandwidth = accelerator.memory_bandwidth_gbps * 1e9 * COPY_BANDWIDTH_SHARE
    routing = layers * (router + copied / bandwidth)

    load = busiest_load(arch, plan, tokens, load_skew)
    rows = rows_per_local_expert(arch, plan, tokens, load)
    tiles = tile_efficiency(rows)
    slowdown = load / (tiles * grouped_gemm_efficiency) if tiles > 0 else 1.0
    grouped = expert_compute_s * max(slowdown - 1.0, 0.0)

    exchange, spans = 0.0, False
    if plan.expert_parallel > 1:
        local_bytes, remote_bytes = dispatch_volumes(arch, plan, tokens, gpus_per_node)
        one, spans = exchange_link_seconds(
            local_bytes * load, remote_bytes * load, gpus_per_node, intra, inter
        )
        # dispatch and combine forward, their gradients backward, and again in a recomputed forward
        count = 4 + (2 if plan.activation_checkpointing else 0)
        exchange = layers * count * one
        if plan.expert_parallel_comm == "overlapped":
            exchange -= min(exchange, stage_compute_s)
        else:
            exchange *= 1.0 - EXPERT_EXCHANGE_OVERLAP.get(plan.resolved_framework.name, 0.0)
    return MoEStageTimes(
        routing_s=routing,
        grouped_gemm_s=grouped,
        all_to_all_s=exchange,
        rows_per_expert=rows,
        tile_efficiency=tiles,
        busiest_load=load,
        exchange_spans_hosts=spans,
    )


def expert_data_parallel(plan: TrainingPlan, gradient_group: int) -> int:
    """Ranks holding the same experts, whose expert gradients are reduced together: the expert
    layers' ranks (tensor parallel folded in with the gradient group) over the expert-parallel ones."""
    return max(gradient_group * plan.tensor_parallel // max(plan.expert_parallel, 1), 1)
