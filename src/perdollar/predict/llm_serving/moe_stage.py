"""A mixture-of-experts model's pass through one pipeline stage: attention, dense layers and
shared experts by the roofline, every MoE layer by :mod:`perdollar.predict.llm_serving.moe_layer`."""

from __future__ import annotations

import math

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.expert_parallel import routed_expert_params
from perdollar.predict.llm_serving.formats import ServingFormat, peak_tflops
from perdollar.predict.llm_serving.moe_layer import MoELayout, Rates, moe_layer_time
from perdollar.predict.llm_serving.rates import (
    allreduce_latency_s,
    flops_rate,
    in_flight_ceiling,
    kv_bandwidth,
    stack_share,
    tensor_parallel_collectives_s,
    weight_bandwidth,
)
from perdollar.predict.llm_serving.shape import GroupShape, StepTime
from perdollar.workload.llm.architecture import DecoderArchitecture


def moe_rates(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> Rates:
    link = cx.intra_host_link(accelerator.interconnect, accelerator.interconnect_bandwidth_gbps,
                              eff.allreduce_bandwidth)  # fmt: skip
    ceiling = in_flight_ceiling(accelerator, eff)
    datasheet = accelerator.memory_bandwidth_gbps * 1e9
    activations = min(datasheet * eff.bandwidth, ceiling) * stack_share(accelerator)
    share = eff.expert_weight_only_bandwidth if fmt.weight_only else eff.expert_bandwidth
    if share is None:
        experts = weight_bandwidth(accelerator, fmt, eff)
    else:
        experts = min(datasheet * share, ceiling) * stack_share(accelerator)
    return Rates(
        expert_bytes_per_s=experts,
        weight_bytes_per_s=weight_bandwidth(accelerator, fmt, eff),
        activation_bytes_per_s=activations,
        flops_per_s=flops_rate(accelerator, fmt, eff),
        link_bytes_per_s=link.bandwidth,
        link_latency_s=allreduce_latency_s(accelerator, eff),
    )


def moe_layout(shape: GroupShape) -> MoELayout:
    """Where one stage's routed experts lie: E ranks of whole experts, or slices over T·D ranks."""
    return MoELayout(
        ranks=shape.expert_split // shape.pipeline_parallel,
        whole_experts=shape.expert_parallel > 1,
        routing_groups=shape.attention_data_parallel,
    )


def attention_rate(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    """FLOP/s of attention's products, which multiply queries with the cache in the cache's
    precision (fp8 attention only where the cache is fp8 and the chip has fp8 units)."""
    dtype = "fp8" if fmt.kv_bytes < 2.0 and accelerator.peak_tflops("fp8") else "bf16"
    peak = accelerator.peak_tflops(dtype) or accelerator.peak_tflops("fp16") or peak_tflops(accelerator, fmt)
    if not peak:
        raise ValueError(f"{accelerator.key} cannot run {fmt.name}")
    return peak * 1e12 * eff.compute * stack_share(accelerator)


def moe_stage_time(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    eff: ServingEfficiency,
    *,
    tokens: float,
    bytes_read: float,
    attention_flops: float,
    kv_bytes: float,
    group_tokens: float | None = None,
) -> StepTime:
    """A MoE model's pass through one stage: attention, dense layers and shared experts by the
    roofline (only what a token multiplies: the input embedding is a lookup), each MoE layer by
    :func:`perdollar.predict.llm_serving.moe_layer.moe_layer_time` on its busiest GPU.

    Under data-parallel attention each group multiplies its own sequences' and prompts' tokens
    through the attention's projections, and the others wait for the busiest at the experts'
    exchange: those products count ``group_tokens`` (the busiest group's; None: an even share)
    on every group. The other products see every token of the step, evenly spread."""
    stages = shape.pipeline_parallel
    layers = math.ceil(arch.num_layers / stages)
    moe_layers = math.ceil(arch.moe_layers / stages)
    rate = flops_rate(accelerator, fmt, eff)
    weights_s = bytes_read / weight_bandwidth(accelerator, fmt, eff)
    routed = routed_expert_params(arch)
    roles = arch.params_by_role()
    beside_experts = arch.active_params - routed * arch.experts_per_token / arch.num_experts
    beside_experts -= roles.get("router", 0)
    groups = shape.attention_data_parallel
    product_flops = 2.0 * beside_experts * tokens
    if groups > 1 and group_tokens is not None:
        projections = roles.get("attention", 0)
        product_flops += 2.0 * projections * (group_tokens * groups - tokens)
    matmul_s = product_flops / shape.gpus / rate
    kv_s = kv_bytes / kv_bandwidth(accelerator, eff)
    attention_s = attention_flops / shape.gpus / attention_rate(accelerator, fmt, eff)
    communication = tensor_parallel_collectives_s(arch, accelerator, shape, tokens, eff)
    overhead = layers * eff.step_overhead_s_per_layer
    moe = moe_layer_time(arch, fmt, moe_layout(shape), tokens, moe_rates(accelerator, fmt, eff), eff)
    stage = max(weights_s, matmul_s) + max(kv_s, attention_s) + communication + overhead
    stage += moe_layers * moe.seconds
    per_step = moe_layers * stages
    return StepTime(
        stage * stages + eff.step_overhead_s,
        (weights_s + kv_s) * stages + moe.experts_memory_s * per_step,
        (matmul_s + attention_s) * stages + moe.experts_compute_s * per_step,
        communication * stages + moe.exchange_s * per_step,
        overhead * stages + eff.step_overhead_s,
        moe_routing_s=moe.routing_s * per_step,
        moe_experts_s=moe.experts_s * per_step,
        moe_experts_memory_s=moe.experts_memory_s * per_step,
        moe_experts_compute_s=moe.experts_compute_s * per_step,
        moe_all_to_all_s=moe.exchange_s * per_step,
    )
