"""One micro-batch on the busiest pipeline stage, and the plan's data-parallel collectives.

A stage runs its layers forward and backward on each GPU's tensor-parallel share (plus one more
forward per layer under activation checkpointing), the tensor-parallel all-reduces (2 in the
forward and 2 in the backward of every layer, Megatron-style: a share ``tensor_parallel_overlap``
of them hidden when the plan overlaps them, none when they block) and its pipeline send and
receive. Selective checkpointing recomputes part of each layer's forward
(``layer_selective_recompute``).

Interleaved 1F1B (Narayanan et al. 2021, section 2.2.2) gives each pipeline rank V chunks of
layers instead of one: the bubble shrinks to (p − 1)/V stage-times a step and each micro-batch
crosses V times as many stage boundaries (V sends forward and V backward per rank). Stages inside
one host send over its NVLink, across hosts over the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.context_expert import context_link, context_ring_seconds
from perdollar.predict.llm.device import micro_batch_times, weight_cast_seconds
from perdollar.predict.llm.fp8 import FP8_PRECISIONS
from perdollar.predict.llm.fp8_recipes import library_of
from perdollar.predict.llm.moe_training import (
    TRAINING_EXPERT_LOAD_SKEW,
    MoEStageTimes,
    expert_flop_share,
    moe_stage_times,
)
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.params import shipped_model
from perdollar.workload.llm.architecture import DecoderArchitecture


@dataclass(frozen=True, slots=True)
class LLMEfficiency:
    """The parameters of the training model.

    Three are fitted on published multi-GPU training figures (LLM Foundry, Megatron-LM,
    Megatron-Core, NeMo, fms-fsdp; torchtitan and torchao held out) by ``python benchmarks/
    llm_training_accuracy.py --fit --save FILE``, starting from :data:`FIT_START`: how much of the
    elementwise chains the trainers fuse and the two overlaps of communication with compute; the
    FP8 GEMMs' two rates on the FP8 rows alone (``benchmarks/llm_training_fp8_accuracy.py``). The
    kernels' rates come from measurements elsewhere (the roofline's GEMM rate, FlashAttention-2's
    published share of it) and the links' shares of their line rate are NCCL's usual figures:
    fitted too, they trade against one another on these runs.
    """

    gemm_efficiency: float = 1.0  # multiplies the roofline's GEMM rate (fitted on measured GPUs)
    # Share of the eager trace's elementwise chains the framework runs fused (0: one kernel per
    # operator, as the trace; 1: every chain one kernel moving only its inputs and outputs).
    fusion: float = 0.917
    # FlashAttention-2's rate, forward and backward, against the GEMMs': on the A100 it reaches 73%
    # of the peak forward and 63% backward (Dao 2023, section 4.1), 65.6% over a step's FLOPs (the
    # backward does 2.5 times the forward's), where cuBLAS bf16 GEMMs reach 84.8%
    # (benchmarks/published_gemm_rates.csv).
    attention_efficiency: float = 0.773
    # FP8 GEMMs' rate against the roofline's FP8 figure: under Transformer Engine (Megatron-Core,
    # NeMo, Composer) and under torchao (torchtitan's float8, tensorwise and rowwise), each fitted
    # on its own library's FP8 rows by benchmarks/llm_training_fp8_accuracy.py. Transformer
    # Engine's 1.056 is 2 ** 0.08: its FP8 products reach the share of their peak that bf16 ones
    # reach of theirs, where the roofline's large-chip law charges the doubled FP8 peak.
    fp8_efficiency: float = 1.056
    fp8_torchao_efficiency: float = 0.937
    communication_overlap: float = 0.879  # share of the overlapping compute that hides DP/FSDP collectives
    tensor_parallel_overlap: float = 0.716  # share of an overlapped plan's TP all-reduces hidden
    intra_link_efficiency: float = 0.7  # NCCL bus bandwidth over the link's line rate
    rdma_efficiency: float = 0.9
    tcp_efficiency: float = 0.6
    memory_headroom: float = 0.10
    # A mixture of experts' grouped expert products against the dense GEMMs' rate, beyond their
    # tiles' padding (perdollar.predict.llm.moe_training); fitted on published MoE training runs
    # (benchmarks/llm_training_moe_accuracy.py).
    grouped_gemm_efficiency: float = 1.0
    # The same on Blackwell (SM100), as PyTorch's grouped products (torch._grouped_mm, which
    # torchtitan's experts run) reached there in 2025: fitted on torchtitan's B200 runs of two
    # teams, Qwen3-30B-A3B under DeepEP and DeepSeek-V3 16B, bf16 both (benchmarks/
    # llm_training_moe_accuracy.py); each source predicted from the other's fit within a median 9%
    # and 13%. The same 16B model's H100 run needs none (4% at 1.0).
    blackwell_grouped_gemm_efficiency: float = 0.4
    # Spread of an expert's routed rows (moe_training.TRAINING_EXPERT_LOAD_SKEW; 0: balance forced)
    expert_load_skew: float = TRAINING_EXPERT_LOAD_SKEW
    # Measured ÷ predicted tokens/s of the user's own bench runs of this model (predict.llm.measured).
    calibration_factor: float = 1.0
    basis: str = "spec"  # spec until calibrated on the user's own measurements


# Where every fit starts: nothing fused, no overlap of tensor-parallel traffic, FP8 GEMMs at the
# roofline's FP8 rate.
FIT_START = LLMEfficiency(
    fusion=0.0,
    fp8_efficiency=1.0,
    fp8_torchao_efficiency=1.0,
    communication_overlap=0.8,
    tensor_parallel_overlap=0.0,
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
    context_ring: float = 0.0  # what is left of the ring attention's traffic once its share hides
    fp8_casts: float = 0.0  # of forward, backward and recompute, the FP8 recipe's quantising kernels
    moe: MoEStageTimes = field(default_factory=MoEStageTimes)  # a mixture of experts' own parts

    @property
    def expert_all_to_all(self) -> float:
        return self.moe.all_to_all_s

    @property
    def total(self) -> float:
        communication = self.tensor_parallel + self.p2p + self.context_ring + self.expert_all_to_all
        moe_compute = self.moe.routing_s + self.moe.grouped_gemm_s
        return self.forward + self.backward + self.recompute + communication + moe_compute + self.overhead


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
    attention_kernel: str = "flash2",
    *,
    nodes: int = 1,
    gpus_per_node: int = 8,
) -> StageTimes:
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    cp = plan.context_parallel
    runner = plan.resolved_framework
    fp8_rate = eff.fp8_efficiency
    if (
        precision in FP8_PRECISIONS
        and library_of(precision, runner.name, accelerator, runner.compiled) == "torchao"
    ):
        fp8_rate = eff.fp8_torchao_efficiency
    times = micro_batch_times(
        arch,
        accelerator,
        micro_batch=plan.micro_batch,
        seq_len=seq_len // cp,
        context_parallel=cp,
        precision=precision,
        tensor_parallel=tp,
        finetune=plan.finetune,
        gemm_efficiency=eff.gemm_efficiency,
        fusion=eff.fusion,
        attention_efficiency=eff.attention_efficiency,
        fp8_efficiency=fp8_rate,
        attention_kernel=attention_kernel,
        lora_rank=plan.lora_rank,
        framework=plan.resolved_framework.name,
        micro_batches=plan.gradient_accumulation,
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
    casts = 0.0
    if plan.strategy == "ddp" and precision in ("amp-bf16", "amp-fp16") and plan.finetune == "full":
        passes = 2 if plan.activation_checkpointing else 1  # the recomputed forward casts again
        casts = passes * weight_cast_seconds(accelerator, arch.total_params / (tp * pp))
    activation_message = plan.micro_batch * seq_len / cp * arch.hidden_size * 2.0  # bf16 hidden states
    all_reduces = 4 + (2 if plan.activation_checkpointing else 0)
    tp_seconds = layers * cx.all_reduce_seconds(activation_message, tp, intra) * all_reduces
    layer_recompute = (
        times.layer_forward
        if plan.activation_checkpointing
        else times.layer_selective_recompute
        if plan.selective_checkpointing
        else 0.0
    )
    # Full recomputation quantises the forward's tensors again; selective keeps the products' inputs.
    recast = times.layer_fp8_casts_forward if plan.activation_checkpointing else 0.0
    fp8_casts = layers * (times.layer_fp8_casts_forward + times.layer_fp8_casts_backward + recast)
    moe = MoEStageTimes()
    if arch.is_moe:
        moe_layers = math.ceil(arch.moe_layers / pp)
        layer_compute = (times.layer_forward + times.layer_backward + layer_recompute) * (
            1 - times.memory_bound_share
        )
        moe = moe_stage_times(
            arch, accelerator, plan, seq_len,
            # Under context parallelism a rank's queries still attend over the whole sequence.
            expert_compute_s=moe_layers * layer_compute * expert_flop_share(arch, seq_len),
            stage_compute_s=layers * layer_compute,
            gemm_flops_per_s=(accelerator.peak_tflops("bf16") or accelerator.peak_tflops("fp32") or 1.0)
            * 1e12 * eff.gemm_efficiency * shipped_model().params.tensor_core_efficiency,
            gpus_per_node=gpus_per_node, intra=intra, inter=inter,
            grouped_gemm_efficiency=grouped_gemm_efficiency_for(eff, accelerator),
            load_skew=eff.expert_load_skew,
        )  # fmt: skip
    return StageTimes(
        forward=layers * times.layer_forward + times.other_forward + casts,
        backward=layers * times.layer_backward + times.other_backward,
        recompute=layers * layer_recompute,
        tensor_parallel=tp_seconds * (1 - tensor_parallel_hidden(plan, eff)),
        p2p=pipeline_send_seconds(
            plan, activation_message / tp, intra if plan.pipeline_inside_host(nodes) else inter
        ),
        overhead=shipped_model().params.step_overhead_s,
        memory_bound_share=times.memory_bound_share,
        intra=intra,
        inter=inter,
        context_ring=(1 - tensor_parallel_hidden(plan, eff))
        * context_ring_seconds(arch, plan, seq_len, layers, context_link(plan, gpus_per_node, intra, inter)),
        moe=moe,
        fp8_casts=fp8_casts,
    )


def grouped_gemm_efficiency_for(eff: LLMEfficiency, accelerator: Accelerator) -> float:
    """The grouped expert products' rate against the dense GEMMs' on ``accelerator``'s generation."""
    if accelerator.architecture.startswith("Blackwell"):
        return eff.blackwell_grouped_gemm_efficiency
    return eff.grouped_gemm_efficiency


def pipeline_bubble_stages(pipeline_parallel: int, virtual_stages: int = 1) -> float:
    """Stage-times a step's pipeline idles: (p − 1)/V for (interleaved) 1F1B."""
    return (pipeline_parallel - 1) / virtual_stages


def pipeline_send_seconds(plan: TrainingPlan, message_bytes: float, link: cx.Link) -> float:
    """One micro-batch's pipeline sends on a rank: one forward and one backward per model chunk."""
    if plan.pipeline_parallel < 2:
        return 0.0
    return 2 * plan.virtual_stages * cx.point_to_point_seconds(message_bytes, link)


def tensor_parallel_hidden(plan: TrainingPlan, eff: LLMEfficiency) -> float:
    """Share of the tensor-parallel collectives hidden behind compute: none when they block."""
    return eff.tensor_parallel_overlap if plan.tensor_parallel_comm == "overlapped" else 0.0


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
    attention_kernel: str = "flash2",
) -> float:
    """Tokens/s of ``plan`` before data-parallel collectives and the optimizer: never below the prediction."""
    eff = efficiency or LLMEfficiency()
    stage = stage_times(
        arch,
        accelerator,
        plan,
        seq_len,
        precision,
        eff,
        network_gbps,
        efa_interfaces,
        None,
        attention_kernel,
        nodes=nodes,
        gpus_per_node=gpus_per_node,
    )
    dp = plan.data_parallel_size(gpus_per_node * nodes)
    micro_batches = max(math.ceil(global_batch / (plan.micro_batch * dp)), 1)
    step = (micro_batches + pipeline_bubble_stages(plan.pipeline_parallel, plan.virtual_stages)) * stage.total
    return micro_batches * plan.micro_batch * dp * seq_len / step


@dataclass(frozen=True, slots=True)
class DataParallelTimes:
    """Seconds of each data-parallel collective before overlap, by the compute it can run beside."""

    per_micro: dict[str, float] = field(default_factory=dict)  # each micro-batch, beside its compute
    after_backward: dict[str, float] = field(default_factory=dict)  # once a step, beside the last backward
    before_forward: dict[str, float] = field(default_factory=dict)  # once a step, beside the next forward
    waited: dict[str, float] = field(default_factory=dict)  # each micro-batch, beside nothing
    alone: dict[str, float] = field(default_factory=dict)  # once a step, beside nothing

    def merged(self, other: DataParallelTimes, *, prefix: str) -> DataParallelTimes:
        """These collectives and ``other``'s, each of those named with ``prefix``."""

        def both(mine: dict[str, float], theirs: dict[str, float]) -> dict[str, float]:
            return {**mine, **{prefix + name: seconds for name, seconds in theirs.items()}}

        return DataParallelTimes(
            per_micro=both(self.per_micro, other.per_micro),
            after_backward=both(self.after_backward, other.after_backward),
            before_forward=both(self.before_forward, other.before_forward),
            waited=both(self.waited, other.waited),
            alone=both(self.alone, other.alone),
        )

    def blocked(self) -> DataParallelTimes:
        """The same collectives when each waits for the compute before it to finish."""
        return DataParallelTimes(
            waited={**self.waited, **self.per_micro},
            alone={**self.alone, **self.after_backward, **self.before_forward},
        )


def data_parallel_seconds(
    plan: TrainingPlan,
    grad_bytes: float,
    weight_bytes: float,
    dp: int,
    dp_in_node: int,
    spans: bool,
    intra: cx.Link,
    inter: cx.Link,
    layers: int,
) -> DataParallelTimes:
    """Each data-parallel collective of the plan, with the compute it can hide behind.

    Each tensor-parallel rank of a host runs its own data-parallel collectives, all at once and
    through the same NICs: a cross-host group gets the host's network divided among them. The
    gradients' once-a-step reduction runs beside the last micro-batch's backward, ZeRO's weight
    gather beside the next step's first forward. FSDP gathers and scatters layer by layer, each
    micro-batch; under ``BACKWARD_POST`` the backward's gather (one of the two) is issued only once
    the layer's gradients are done, and the next layer's backward waits for all of it."""
    inter = cx.Link(inter.bandwidth / plan.tensor_parallel, inter.latency, inter.name)
    link = cx.group_link(spans, intra, inter)
    if plan.strategy == "ddp":
        return DataParallelTimes(
            after_backward={"gradient all-reduce": cx.all_reduce_seconds(grad_bytes, dp, link)}
        )
    if plan.strategy == "zero1":
        return DataParallelTimes(
            after_backward={"gradient reduce-scatter": cx.all_gather_seconds(grad_bytes, dp, link)},
            before_forward={"weight all-gather": cx.all_gather_seconds(weight_bytes, dp, link)},
        )
    if plan.strategy == "zero2":
        return DataParallelTimes(
            per_micro={"gradient reduce-scatter": cx.all_gather_seconds(grad_bytes, dp, link)},
            before_forward={"weight all-gather": cx.all_gather_seconds(weight_bytes, dp, link)},
        )
    shard, shard_link = (dp, link) if plan.strategy == "fsdp" else (dp_in_node, intra)
    gather = cx.all_gather_seconds(weight_bytes, shard, shard_link, layers)
    scatter = cx.all_gather_seconds(grad_bytes, shard, shard_link, layers)
    post = plan.backward_prefetch == "post"
    after_backward = {}
    if plan.strategy == "hsdp":
        # Each local shard all-reduces with its peers on the other hosts; the host's GPUs do so at
        # once through the same NICs, so the host moves the whole gradient's ring volume.
        replicas = max(dp // max(dp_in_node, 1), 1)
        after_backward["cross-host gradient all-reduce"] = cx.all_reduce_seconds(grad_bytes, replicas, inter)
    return DataParallelTimes(
        per_micro={"weight all-gather": gather if post else 2 * gather, "gradient reduce-scatter": scatter},
        after_backward=after_backward,
        waited={"backward weight all-gather": gather} if post else {},
    )


def exposed_collectives(
    collectives: DataParallelTimes,
    micro_batches: int,
    hide: float,
    forward: float,
    backward: float,
    recompute: float,
) -> dict[str, float]:
    """Seconds per step of each collective left over once compute beside it hides a share ``hide``."""
    exposed = {name: micro_batches * seconds for name, seconds in collectives.waited.items()}
    for name, seconds in collectives.alone.items():
        exposed[name] = exposed.get(name, 0.0) + seconds
    for group, window, count in (
        (collectives.per_micro, forward + backward + recompute, micro_batches),
        (collectives.after_backward, backward, 1),
        (collectives.before_forward, forward, 1),
    ):
        comm = sum(group.values())
        left = max(comm - hide * window, 0.0)
        for name, seconds in group.items():
            exposed[name] = exposed.get(name, 0.0) + count * left * (seconds / comm if comm else 0.0)
    return exposed
