"""What a GPU and its links reach for the serving model: the achieved shares of bandwidth and
tensor rate an engine's kernels get, a ROCm stack's share, and the tensor-parallel collectives."""

from __future__ import annotations

import math

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.formats import ServingFormat, peak_tflops
from perdollar.predict.llm_serving.shape import GroupShape
from perdollar.predict.params import ModelParams
from perdollar.workload.llm.architecture import DecoderArchitecture


def allreduce_per_layer_s(
    accelerator: Accelerator, shape: GroupShape, tokens: float, hidden: int, eff: ServingEfficiency
) -> float:
    """Two all-reduces per layer (after attention and after the MLP) of 16-bit activations, ring."""
    if shape.tensor_parallel <= 1:
        return 0.0
    return 2 * allreduce_s(accelerator, shape.tensor_parallel, tokens, hidden, eff)


def allreduce_s(
    accelerator: Accelerator, ranks: int, tokens: float, hidden: int, eff: ServingEfficiency
) -> float:
    """One ring all-reduce of ``tokens`` 16-bit hidden states over ``ranks`` GPUs of the host."""
    link = (accelerator.interconnect_bandwidth_gbps or 32.0) * 1e9 / 2 * eff.allreduce_bandwidth  # one way
    message = tokens * hidden * 2.0
    # Decode's messages are a few KB to a few MB: at batch 1 the link's latency, not its bandwidth,
    # sets the time, so each link keeps its own.
    return allreduce_latency_s(accelerator, eff) + 2 * (ranks - 1) / ranks * message / link


def allreduce_latency_s(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    """The fixed cost of one all-reduce on the accelerator's link (NVLink/NVSwitch, xGMI or PCIe)."""
    link_name = accelerator.interconnect.lower()
    if "nvlink" in link_name or "nvswitch" in link_name or "ici" in link_name:
        return eff.allreduce_latency_nvlink_s
    if "infinity" in link_name or "xgmi" in link_name:
        return eff.allreduce_latency_xgmi_s
    return eff.allreduce_latency_pcie_s


def in_flight_ceiling(accelerator: Accelerator, eff: ServingEfficiency) -> float:
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


def weight_bandwidth(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    share = eff.weight_only_bandwidth if fmt.weight_only else eff.bandwidth
    achieved = min(accelerator.memory_bandwidth_gbps * 1e9 * share, in_flight_ceiling(accelerator, eff))
    return achieved * stack_share(accelerator)


def streaming_bandwidth(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    """The rate of a plain pass over activations (16-bit streaming share, no weight kernel)."""
    return accelerator.memory_bandwidth_gbps * 1e9 * eff.bandwidth * stack_share(accelerator)


def kv_bandwidth(accelerator: Accelerator, eff: ServingEfficiency) -> float:
    datasheet_share = accelerator.memory_bandwidth_gbps * 1e9 * eff.kv_bandwidth
    return min(datasheet_share, in_flight_ceiling(accelerator, eff)) * stack_share(accelerator)


def fp16_accumulate_factor(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    """How much faster than the catalog's fp16 rate an engine multiplies that accumulates in fp16:
    the catalog lists GeForce cards' fp16 tensor rate with fp32 accumulate, half their
    fp16-accumulate rate (NVIDIA's Ampere GA102 and Ada whitepapers); other chips run both alike."""
    # GeForce RTX only: the GTX cards have no tensor cores, so no such rate.
    geforce = accelerator.vendor == "NVIDIA" and accelerator.family.startswith("GeForce RTX")
    return 2.0 if eff.fp16_accumulate and geforce and fmt.compute_dtype == "fp16" else 1.0


def flops_rate(accelerator: Accelerator, fmt: ServingFormat, eff: ServingEfficiency) -> float:
    peak = peak_tflops(accelerator, fmt)
    if not peak:
        raise ValueError(f"{accelerator.key} cannot run {fmt.name}")
    peak *= fp16_accumulate_factor(accelerator, fmt, eff)
    return peak * 1e12 * eff.compute * stack_share(accelerator)


def tensor_parallel_collectives_s(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    shape: GroupShape,
    tokens: float,
    eff: ServingEfficiency,
) -> float:
    """Tensor-parallel all-reduces of every layer of a stage (after attention and after the MLP).

    A MoE model: each attention data-parallel group all-reduces its own share of the tokens; under
    expert parallelism a MoE layer's MLP all-reduce gives way to its dispatch and combine (in the
    MoE layer model); beside sliced experts under data-parallel attention every MLP gathers all
    groups' tokens and reduce-scatters its outputs over all ranks (an all-reduce's bytes).
    """
    layers = math.ceil(arch.num_layers / shape.pipeline_parallel)
    groups = shape.attention_data_parallel
    per_layer = allreduce_per_layer_s(accelerator, shape, tokens / groups, arch.hidden_size, eff)
    if shape.expert_parallel > 1:
        moe_layers = math.ceil(arch.moe_layers / shape.pipeline_parallel)
        return layers * per_layer - moe_layers * per_layer / 2
    if groups > 1:
        ranks = shape.expert_split // shape.pipeline_parallel
        return layers * (per_layer / 2 + allreduce_s(accelerator, ranks, tokens, arch.hidden_size, eff))
    return layers * per_layer
