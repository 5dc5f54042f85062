"""One mixture-of-experts layer as a serving engine runs it, part by part, on its busiest GPU.

A MoE layer replaces the MLP's two large matrix products with four kinds of work:

- **routing**: the router's product (hidden × experts a token), top-k, the copies of each token's
  hidden state in expert order and the weighted sum of its k outputs (permute and un-permute),
  and the fixed cost of the handful of short kernels an engine's fused-MoE path launches per layer
  whatever the batch (top-k, alignment of rows to tiles, activation quantisation, sums);
- **grouped expert products**: each touched expert multiplies the rows routed to it. With few rows
  an expert is a matrix-vector product that streams its weights (bandwidth- and latency-bound);
  with many it is a matrix product at the tensor rate, less the padding of its last tile;
- **load imbalance**: under expert parallelism each rank holds whole experts, and the rank that
  receives the most rows sets the layer's time;
- **exchange**: expert parallelism sends each token to the ranks of its experts and brings the
  outputs back (dispatch and combine, two all-to-alls), over the host's GPU link and, between
  hosts, the network; an engine may hide part of it behind the experts' products.

Everything here is per MoE layer and per GPU; :mod:`perdollar.predict.llm_serving.timing` adds the
attention, the dense layers and shared experts, and the collectives of tensor parallelism.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perdollar.predict.expert_load import EXPERT_LOAD_SKEW, busiest_of, tile_efficiency
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.expert_parallel import expert_exchange_bytes_per_gpu
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.workload.llm.architecture import DecoderArchitecture

# The router's weights stay 16-bit in the quantised checkpoints engines serve (DeepSeek-V3's fp8
# checkpoint and gpt-oss's MXFP4 one keep the gate in bf16).
ROUTER_BYTES = 2.0


@dataclass(frozen=True, slots=True)
class MoELayout:
    """How one stage's routed experts lie over its GPUs.

    ranks: GPUs the routed experts are split over; whole_experts: each rank holds whole experts
    (expert parallelism) rather than a 1/ranks slice of every expert (tensor parallelism);
    routing_groups: groups that route their own tokens (attention data-parallel groups; the
    ranks of a tensor-parallel group route the same tokens); gpus_per_host: ranks that share a
    host's GPU link (None: all of them; the rest are reached over the network).
    """

    ranks: int = 1
    whole_experts: bool = False
    routing_groups: int = 1
    gpus_per_host: int | None = None


@dataclass(frozen=True, slots=True)
class Rates:
    """What the GPU reaches: bytes/s streaming the experts' weights (the engine's MoE kernels) and
    the router's (the format's dense rate), bytes/s moving activations, FLOP/s of the format's
    matrix products, and the host link for the exchange."""

    expert_bytes_per_s: float
    weight_bytes_per_s: float
    activation_bytes_per_s: float
    flops_per_s: float
    link_bytes_per_s: float
    link_latency_s: float
    network_bytes_per_s: float = 0.0  # between hosts (0: every rank is on one host)


@dataclass(frozen=True, slots=True)
class MoELayerTime:
    """One MoE layer on the busiest GPU, in seconds by part, and the facts behind them."""

    routing_s: float
    experts_memory_s: float  # the grouped products' weight reads
    experts_compute_s: float  # their multiplies, padded to whole tiles
    exchange_s: float  # dispatch and combine not hidden behind the experts (0 without expert parallelism)
    rows_per_expert: float  # rows each touched expert multiplies on the busiest rank
    busiest_load: float  # the busiest rank's rows over the mean rank's (1: balanced)

    @property
    def experts_s(self) -> float:
        """A grouped product streams its weights while it multiplies: the longer of the two."""
        return max(self.experts_memory_s, self.experts_compute_s)

    @property
    def seconds(self) -> float:
        return self.routing_s + self.experts_s + self.exchange_s


def touched_experts(experts: float, top_k: int, rows: float) -> float:
    """Distinct experts among ``experts`` that ``rows`` tokens routed uniformly to ``top_k`` each reach."""
    if experts <= 1:
        return 1.0
    share = min(top_k / experts, 1.0)
    return experts * (1.0 - (1.0 - share) ** max(rows, 1.0))


def busiest_rank_load(layout: MoELayout, experts_per_rank: float, rows_per_rank: float) -> float:
    """The busiest rank's rows over the mean rank's: 1 when every rank holds a slice of every expert."""
    if not layout.whole_experts or layout.ranks <= 1:
        return 1.0
    spread = math.sqrt(EXPERT_LOAD_SKEW**2 / max(experts_per_rank, 1.0) + 1.0 / max(rows_per_rank, 1.0))
    return 1.0 + busiest_of(layout.ranks) * spread


def activation_bytes(fmt: ServingFormat) -> float:
    """Bytes of one activation element entering the experts: fp8 where the products run in fp8."""
    return 1.0 if fmt.compute_dtype in ("fp8", "fp4") else 2.0


def routing_s(
    arch: DecoderArchitecture, fmt: ServingFormat, layout: MoELayout, tokens: float, rates: Rates,
    eff: ServingEfficiency,
) -> float:  # fmt: skip
    """The router's product, the permute and un-permute traffic and the fused kernels' floor.

    Each routing group scores its own tokens (every rank of a tensor-parallel group the same ones).
    Permute reads a token's hidden state and writes its k copies in expert order; un-permute reads
    the k 16-bit outputs and writes their weighted sum.
    """
    routed = tokens / max(layout.routing_groups, 1)
    router_params = arch.router_params_per_layer
    product = max(router_params * ROUTER_BYTES / rates.weight_bytes_per_s,
                  2.0 * router_params * routed / rates.flops_per_s)  # fmt: skip
    copies = routed * arch.experts_per_token
    # Per token: its 16-bit hidden state read and its sum written; per copy: the copy written (fp8
    # where the products run in fp8) and its 16-bit output read back.
    moved = arch.hidden_size * (4.0 * routed + copies * (activation_bytes(fmt) + 2.0))
    return product + moved / rates.activation_bytes_per_s + eff.moe_floor_s


def expert_products(
    arch: DecoderArchitecture, fmt: ServingFormat, layout: MoELayout, tokens: float, rates: Rates
) -> tuple[float, float, float, float]:  # fmt: skip
    """(weight-read s, multiply s, rows per touched expert, busiest load) of the busiest rank.

    Sliced experts: every rank multiplies every token's rows with its 1/ranks of each touched
    expert. Whole experts: a rank receives its share of the rows, the busiest rank more, and
    reads only the experts among its own that those rows reach.
    """
    rows = tokens * arch.experts_per_token  # token-expert pairs of the replica in this layer
    weight_bytes = arch.expert_params * fmt.expert_weight_bytes
    if layout.whole_experts and layout.ranks > 1:
        local = arch.num_experts / layout.ranks
        mean_rows = rows / layout.ranks
        load = busiest_rank_load(layout, local, mean_rows)
        busiest_rows = mean_rows * load
        touched = local * (1.0 - (1.0 - 1.0 / local) ** max(busiest_rows, 1.0)) if local > 1 else 1.0
        read = touched * weight_bytes
        flops = 2.0 * busiest_rows * arch.expert_params
    else:
        touched = touched_experts(arch.num_experts, arch.experts_per_token, tokens)
        busiest_rows, load = rows, 1.0
        read = touched * weight_bytes / layout.ranks
        flops = 2.0 * rows * arch.expert_params / layout.ranks
    per_expert = busiest_rows / max(touched, 1.0)
    memory = read / rates.expert_bytes_per_s
    efficiency = tile_efficiency(per_expert)
    compute = flops / (rates.flops_per_s * efficiency) if efficiency > 0 else 0.0
    return memory, compute, per_expert, load


def exchange_s(
    arch: DecoderArchitecture, fmt: ServingFormat, layout: MoELayout, tokens: float, rates: Rates,
    *, busiest_load: float = 1.0,
) -> float:  # fmt: skip
    """Dispatch and combine of one MoE layer under expert parallelism (0 without it).

    Each rank sends its tokens' copies to the ranks of their experts and receives as many back
    (the busiest rank receives ``busiest_load`` times the mean). Peers on the same host are
    reached over the GPU link, the others over the network; each all-to-all pays the link's
    latency once.
    """
    if not layout.whole_experts or layout.ranks <= 1:
        return 0.0
    volume = expert_exchange_bytes_per_gpu(arch, fmt, layout.ranks, tokens) * busiest_load
    per_host = min(layout.gpus_per_host or layout.ranks, layout.ranks)
    remote_share = (layout.ranks - per_host) / (layout.ranks - 1)
    if remote_share > 0 and rates.network_bytes_per_s <= 0:
        raise ValueError("expert parallelism across hosts needs the network's bandwidth")
    local_s = volume * (1.0 - remote_share) / rates.link_bytes_per_s
    remote_s = volume * remote_share / rates.network_bytes_per_s if remote_share > 0 else 0.0
    # Both links carry their share at once; the slower one sets the time.
    return max(local_s, remote_s) + 2 * rates.link_latency_s


def moe_layer_time(
    arch: DecoderArchitecture, fmt: ServingFormat, layout: MoELayout, tokens: float, rates: Rates,
    eff: ServingEfficiency,
) -> MoELayerTime:  # fmt: skip
    """One MoE layer for ``tokens`` tokens of the replica, on its busiest GPU.

    The engine hides up to ``eff.exchange_overlap`` of the exchange behind the experts' products
    (two micro-batches, one exchanging while the other multiplies), never more than they last.
    """
    memory, compute, per_expert, load = expert_products(arch, fmt, layout, tokens, rates)
    exchange = exchange_s(arch, fmt, layout, tokens, rates, busiest_load=load)
    hidden = eff.exchange_overlap * min(exchange, max(memory, compute))
    return MoELayerTime(
        routing_s=routing_s(arch, fmt, layout, tokens, rates, eff),
        experts_memory_s=memory,
        experts_compute_s=compute,
        exchange_s=exchange - hidden,
        rows_per_expert=per_expert,
        busiest_load=load,
    )
