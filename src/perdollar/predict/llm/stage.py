"""One micro-batch on the busiest pipeline stage, and the plan's data-parallel collectives.

A stage runs its layers forward and backward on each GPU's tensor-parallel share (plus one more
forward per layer under activation checkpointing), the tensor-parallel all-reduces (2 in the
forward and 2 in the backward of every layer, Megatron-style, on the critical path unless
``tensor_parallel_overlap`` says otherwise) and its pipeline send and receive. Selective
checkpointing recomputes part of each layer's forward (``layer_selective_recompute``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.device import micro_batch_times
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.params import shipped_model
from perdollar.workload.llm.architecture import DecoderArchitecture


@dataclass(frozen=True, slots=True)
class LLMEfficiency:
    """The fitted parameters of the training model.

    The defaults are fitted on published multi-GPU training figures (LLM Foundry, Megatron-LM,
    Megatron-Core, NeMo, fms-fsdp; torchtitan held out) by ``python benchmarks/
    llm_training_accuracy.py --fit --save FILE``, starting from :data:`FIT_START`; the links'
    shares of their line rate are not fitted (NCCL's usual figures).
    """

    gemm_efficiency: float = 0.941  # multiplies the roofline's GEMM/attention rate
    # Share of the eager trace's elementwise, copy and reduction traffic left once the framework
    # fuses those chains (the trace runs one kernel per operator; trainers at scale fuse them).
    fused_traffic: float = 0.227
    attention_efficiency: float = 0.772  # fused attention's rate (forward and backward) against the GEMMs'
    fp8_efficiency: float = 0.994  # FP8 GEMMs' rate against the roofline's FP8 figure
    communication_overlap: float = 0.708  # share of the overlapping compute that hides DP/FSDP collectives
    tensor_parallel_overlap: float = 0.415  # share of TP all-reduces hidden (0: on the critical path)
    intra_link_efficiency: float = 0.7  # NCCL bus bandwidth over the link's line rate
    rdma_efficiency: float = 0.9
    tcp_efficiency: float = 0.6
    memory_headroom: float = 0.10
    # Measured ÷ predicted tokens/s of the user's own bench runs of this model (predict.llm.measured).
    calibration_factor: float = 1.0
    basis: str = "spec"  # spec until calibrated on the user's own measurements


# Where every fit starts: datasheet links at NCCL's usual share, no fusion, no overlap of
# tensor-parallel traffic, GEMMs and attention at the roofline's own rates.
FIT_START = LLMEfficiency(
    gemm_efficiency=1.0,
    fused_traffic=1.0,
    attention_efficiency=1.0,
    fp8_efficiency=1.0,
    communication_overlap=0.8,
    tensor_parallel_overlap=0.0,
    intra_link_efficiency=0.7,
    rdma_efficiency=0.9,
    tcp_efficiency=0.6,
)


@dataclass(frozen=True, slots=True)
class StageTimes:
    """Seconds of one micro-batch on the busiest pipeline stage, by part."""

    forward: float
    backward: float
    recompute: float
    tensor_parallel: float
    p2p: float
    overhead: float
    memory_bound_share: float
    intra: cx.Link
    inter: cx.Link

    @property
    def total(self) -> float:
        return self.forward + self.backward + self.recompute + self.tensor_parallel + self.p2p + self.overhead


def stage_times(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    plan: TrainingPlan,
    seq_len: int,
    precision: str,
    eff: LLMEfficiency,
    network_gbps: float | None,
    efa_interfaces: int | None,
    interconnect: str | None,
) -> StageTimes:
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    times = micro_batch_times(
        arch,
        accelerator,
        micro_batch=plan.micro_batch,
        seq_len=seq_len,
        precision=precision,
        tensor_parallel=tp,
        finetune=plan.finetune,
        gemm_efficiency=eff.gemm_efficiency,
        fused_traffic=eff.fused_traffic,
        attention_efficiency=eff.attention_efficiency,
        fp8_efficiency=eff.fp8_efficiency,
    )
    layers = math.ceil(arch.num_layers / pp)
    intra = cx.intra_host_link(
        interconnect or accelerator.interconnect,
        accelerator.interconnect_bandwidth_gbps,
        eff.intra_link_efficiency,
    )
    inter = cx.inter_host_link(
        network_gbps, efa_interfaces, rdma_efficiency=eff.rdma_efficiency, tcp_efficiency=eff.tcp_efficiency
    )
    activation_message = plan.micro_batch * seq_len * arch.hidden_size * 2.0  # bf16 hidden states
    all_reduces = 4 + (2 if plan.activation_checkpointing else 0)
    tp_seconds = layers * cx.all_reduce_seconds(activation_message, tp, intra) * all_reduces
    return StageTimes(
        forward=layers * times.layer_forward + times.other_forward,
        backward=layers * times.layer_backward + times.other_backward,
        recompute=layers
        * (
            times.layer_forward
            if plan.activation_checkpointing
            else times.layer_selective_recompute
            if plan.selective_checkpointing
            else 0.0
        ),
        tensor_parallel=tp_seconds * (1 - eff.tensor_parallel_overlap),
        p2p=2 * cx.point_to_point_seconds(activation_message / tp, inter) if pp > 1 else 0.0,
        overhead=shipped_model().params.step_overhead_s,
        memory_bound_share=times.memory_bound_share,
        intra=intra,
        inter=inter,
    )


def throughput_ceiling(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    plan: TrainingPlan,
    *,
    gpus_per_node: int,
    nodes: int,
    seq_len: int,
    global_batch: int,
    precision: str = "amp-bf16",
    network_gbps: float | None = None,
    efa_interfaces: int | None = None,
    efficiency: LLMEfficiency | None = None,
) -> float:
    """Tokens/s of ``plan`` before data-parallel collectives and the optimizer: never below the prediction."""
    eff = efficiency or LLMEfficiency()
    stage = stage_times(arch, accelerator, plan, seq_len, precision, eff, network_gbps, efa_interfaces, None)
    dp = plan.data_parallel_size(gpus_per_node * nodes)
    micro_batches = max(math.ceil(global_batch / (plan.micro_batch * dp)), 1)
    step = (micro_batches + plan.pipeline_parallel - 1) * stage.total
    return micro_batches * plan.micro_batch * dp * seq_len / step


def data_parallel_seconds(
    plan: TrainingPlan,
    grad_bytes: float,
    weight_bytes: float,
    dp: int,
    dp_in_node: int,
    spans: bool,
    intra: cx.Link,
    inter: cx.Link,
    micro_batches: int,
) -> tuple[dict[str, float], dict[str, float]]:
    """(per optimizer step, per micro-batch) seconds of each data-parallel collective, before overlap."""
    link = cx.group_link(spans, intra, inter)
    if plan.strategy == "ddp":
        return {"gradient all-reduce": cx.all_reduce_seconds(grad_bytes, dp, link)}, {}
    if plan.strategy == "zero1":
        return {
            "gradient reduce-scatter": cx.all_gather_seconds(grad_bytes, dp, link),
            "weight all-gather": cx.all_gather_seconds(weight_bytes, dp, link),
        }, {}
    if plan.strategy == "zero2":
        return {"weight all-gather": cx.all_gather_seconds(weight_bytes, dp, link)}, {
            "gradient reduce-scatter": cx.all_gather_seconds(grad_bytes, dp, link)
        }
    shard, shard_link = (dp, link) if plan.strategy == "fsdp" else (dp_in_node, intra)
    per_micro = {
        "weight all-gather": 2 * cx.all_gather_seconds(weight_bytes, shard, shard_link),
        "gradient reduce-scatter": cx.all_gather_seconds(grad_bytes, shard, shard_link),
    }
    per_step = {}
    if plan.strategy == "hsdp":
        # Each local shard all-reduces with its peers on the other hosts; the host's GPUs do so at
        # once through the same NICs, so the host moves the whole gradient's ring volume.
        replicas = max(dp // max(dp_in_node, 1), 1)
        per_step["cross-host gradient all-reduce"] = cx.all_reduce_seconds(grad_bytes, replicas, inter)
    return per_step, per_micro
