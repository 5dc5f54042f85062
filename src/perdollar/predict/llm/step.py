"""Time of one optimizer step of a training plan, and the prediction built on it.

Per micro-batch, the busiest pipeline stage runs its layers forward and backward (plus one more
forward of each layer under activation checkpointing), its tensor-parallel all-reduces (2 in the
forward and 2 in the backward of every layer, Megatron-style, on the critical path) and its
pipeline sends. 1F1B runs m micro-batches in (m + p − 1) stage-times: the bubble is (p − 1) of
them. Data-parallel collectives (DDP's all-reduce, ZeRO's reduce-scatter and all-gather, FSDP's
per-micro-batch gathers) hide behind the compute they overlap with up to a calibrated share
(``communication_overlap``); what is left is exposed. The optimizer steps each GPU's shard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.device import micro_batch_times, optimizer_seconds
from perdollar.predict.llm.memory import (
    GIB,
    MemoryPerGPU,
    ModelStates,
    memory_per_gpu,
    model_states,
    state_bytes_per_param,
)
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.params import shipped_model
from perdollar.profile.llm_trace import layer_trace
from perdollar.workload.llm.architecture import DecoderArchitecture

# Host-side AdamW with offloaded states: parameters per second per host (an assumption of the
# order ZeRO-Offload reports for its vectorised CPU Adam), and PCIe at an achievable 20 GB/s.
CPU_ADAM_PARAMS_PER_S = 1.0e9
OFFLOAD_PCIE_BYTES_PER_S = 20e9


@dataclass(frozen=True, slots=True)
class LLMEfficiency:
    """Fitted or calibrated parameters of the training model, with shipped defaults."""

    gemm_efficiency: float = 1.0  # multiplies the roofline's GEMM/attention rate
    communication_overlap: float = 0.8  # share of the overlapping compute that hides DP/FSDP collectives
    tensor_parallel_overlap: float = 0.0  # share of TP all-reduces hidden (0: on the critical path)
    intra_link_efficiency: float = 0.7  # NCCL bus bandwidth over the link's line rate
    rdma_efficiency: float = 0.9
    tcp_efficiency: float = 0.6
    memory_headroom: float = 0.10
    basis: str = "spec"  # spec until fitted on measurements (then calibrated)


@dataclass(frozen=True, slots=True)
class LLMTrainingPrediction:
    tokens_per_second: float  # total over all GPUs
    tokens_per_second_low: float
    tokens_per_second_high: float
    samples_per_second: float  # sequences per second
    step_time_s: float  # one optimizer step
    mfu: float  # model FLOPs utilisation (see MFU_CONVENTION)
    memory_per_gpu_gib: float
    fits: bool
    fit_reason: str
    bottleneck: str  # compute | memory-bandwidth | communication | pipeline-bubble | optimizer
    basis: str  # spec | calibrated | measured
    breakdown_s: dict[str, float]
    plan: TrainingPlan
    gpus: int = 1
    global_batch: int = 1  # sequences per optimizer step, as the plan runs it
    memory_gib: dict[str, float] = field(default_factory=dict)
    largest_micro_batch: int = 0


MFU_CONVENTION = (
    "model FLOPs per token = 6·N + 12·layers·(heads·head_dim)·seq_len (N: parameters a token passes "
    "through, the input embedding excluded; PaLM's convention; 4·N + 8·… for LoRA/QLoRA, which compute "
    "no weight gradients of the base), over the GPUs' dense peak"
)


def model_flops_per_token(arch: DecoderArchitecture, seq_len: int, finetune: str = "full") -> float:
    """Forward + backward FLOPs per token by the convention of :data:`MFU_CONVENTION`."""
    matmul_params = arch.active_params - (0 if arch.tie_word_embeddings else arch.embedding_params)
    passes = 3.0 if finetune == "full" else 2.0  # forward, activation gradient, weight gradient
    attention = 4 * arch.num_layers * arch.num_attention_heads * arch.head_dim * seq_len
    return passes * (2.0 * matmul_params + attention)


def _peak_flops(accelerator: Accelerator, precision: str) -> float:
    dtype = {"amp-bf16": "bf16", "bf16": "bf16", "amp-fp16": "fp16", "fp16": "fp16"}.get(precision, precision)
    return (accelerator.peak_tflops(dtype) or accelerator.peak_tflops("fp32") or 1.0) * 1e12


def plan_problem(
    plan: TrainingPlan, arch: DecoderArchitecture, gpus_per_node: int, nodes: int, global_batch: int
) -> str:
    """Why ``plan`` cannot run on this cluster at all ('' when it can)."""
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    if gpus_per_node < 1:
        return "a fraction of a GPU cannot train a language model"
    if gpus_per_node % tp:
        return f"tensor parallel {tp} does not divide the {gpus_per_node} GPUs of a host"
    if nodes % pp:
        return f"pipeline parallel {pp} does not divide {nodes} hosts"
    if pp > arch.num_layers:
        return f"pipeline parallel {pp} exceeds the model's {arch.num_layers} layers"
    if plan.strategy == "hsdp" and nodes // pp < 2:
        return "HSDP replicates across hosts: it needs at least 2 hosts per pipeline stage"
    data_parallel = gpus_per_node * nodes // (tp * pp)
    if global_batch < data_parallel * plan.micro_batch:
        return (
            f"global batch {global_batch} is smaller than {data_parallel} data-parallel ranks × "
            f"micro-batch {plan.micro_batch}"
        )
    return ""


def plan_memory(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    plan: TrainingPlan,
    *,
    gpus_per_node: int,
    nodes: int,
    seq_len: int,
    global_batch: int,
    precision: str,
    efficiency: LLMEfficiency,
) -> tuple[MemoryPerGPU, int, ModelStates]:
    """Memory per GPU of ``plan``, the micro-batches per optimizer step it runs, and its model states."""
    gpus = gpus_per_node * nodes
    data_parallel = plan.data_parallel_size(gpus)
    micro_batches = max(math.ceil(global_batch / (plan.micro_batch * data_parallel)), 1)
    states = model_states(
        arch,
        plan,
        data_parallel=data_parallel,
        data_parallel_in_node=min(data_parallel, max(gpus_per_node // plan.tensor_parallel, 1)),
        precision=precision,
    )
    per_sequence = layer_trace(arch, 1, seq_len, precision, train_base=plan.finetune == "full")
    memory = memory_per_gpu(
        arch,
        plan,
        states=states,
        layer_saved_per_sequence=per_sequence.layer_saved_bytes,
        other_saved_per_sequence=per_sequence.other_saved_bytes,
        hidden_state_per_sequence=per_sequence.hidden_state_bytes,
        micro_batches=micro_batches,
        accelerator_memory_gib=accelerator.memory_gib,
        headroom=efficiency.memory_headroom,
    )
    return memory, micro_batches, states


def _data_parallel_seconds(
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
        replicas = max(dp // max(dp_in_node, 1), 1)
        per_step["cross-host gradient all-reduce"] = cx.all_reduce_seconds(
            grad_bytes / max(dp_in_node, 1), replicas, inter
        )
    return per_step, per_micro


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


def _stage_times(
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
        recompute=layers * times.layer_forward if plan.activation_checkpointing else 0.0,
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
    stage = _stage_times(arch, accelerator, plan, seq_len, precision, eff, network_gbps, efa_interfaces, None)
    dp = plan.data_parallel_size(gpus_per_node * nodes)
    micro_batches = max(math.ceil(global_batch / (plan.micro_batch * dp)), 1)
    step = (micro_batches + plan.pipeline_parallel - 1) * stage.total
    return micro_batches * plan.micro_batch * dp * seq_len / step


def predict_llm_training(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    *,
    gpus_per_node: int,
    nodes: int,
    plan: TrainingPlan,
    seq_len: int,
    global_batch: int,
    precision: str = "amp-bf16",
    network_gbps: float | None = None,
    efa_interfaces: int | None = None,
    efficiency: LLMEfficiency | None = None,
    interconnect: str | None = None,
) -> LLMTrainingPrediction:
    """Throughput, memory and bottleneck of ``plan`` on ``nodes`` hosts of ``gpus_per_node`` GPUs."""
    eff = efficiency or LLMEfficiency()
    problem = plan_problem(plan, arch, gpus_per_node, nodes, global_batch)
    if problem:
        raise PerdollarError(
            f"the plan {plan.token()!r} cannot run here: {problem}", "choose another plan or cluster"
        )
    gpus = gpus_per_node * nodes
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    dp = plan.data_parallel_size(gpus)
    dp_in_node = min(dp, max(gpus_per_node // tp, 1))
    memory, micro_batches, states = plan_memory(
        arch,
        accelerator,
        plan,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        seq_len=seq_len,
        global_batch=global_batch,
        precision=precision,
        efficiency=eff,
    )
    plan = replace(plan, gradient_accumulation=micro_batches)
    stage_times = _stage_times(
        arch, accelerator, plan, seq_len, precision, eff, network_gbps, efa_interfaces, interconnect
    )
    forward, backward, recompute = stage_times.forward, stage_times.backward, stage_times.recompute
    tp_seconds, p2p, overhead, stage = (
        stage_times.tensor_parallel,
        stage_times.p2p,
        stage_times.overhead,
        stage_times.total,
    )
    intra, inter = stage_times.intra, stage_times.inter

    weight_b, grad_b, _ = state_bytes_per_param(precision)
    model_split = tp * pp
    trained = states.trainable_params_per_gpu * (
        dp if plan.strategy in ("zero1", "zero2", "fsdp") else dp_in_node if plan.strategy == "hsdp" else 1
    )
    grad_bytes = trained * grad_b
    weight_bytes = states.weights * (
        dp if plan.strategy == "fsdp" else dp_in_node if plan.strategy == "hsdp" else 1
    )
    if plan.strategy in ("zero1", "zero2"):
        weight_bytes = trained * weight_b
    del model_split
    per_step, per_micro = _data_parallel_seconds(
        plan, grad_bytes, weight_bytes, dp, dp_in_node, nodes // pp > 1, intra, inter, micro_batches
    )
    hide = eff.communication_overlap
    exposed: dict[str, float] = {}
    micro_comm = sum(per_micro.values())
    micro_exposed = max(micro_comm - hide * (forward + backward + recompute), 0.0)
    for name, seconds in per_micro.items():
        exposed[name] = micro_batches * micro_exposed * (seconds / micro_comm if micro_comm else 0.0)
    step_comm = sum(per_step.values())
    step_exposed = max(step_comm - hide * backward, 0.0)
    for name, seconds in per_step.items():
        exposed[name] = exposed.get(name, 0.0) + step_exposed * (seconds / step_comm if step_comm else 0.0)

    if plan.cpu_offload:
        optimizer = states.trainable_params_per_gpu * gpus_per_node / CPU_ADAM_PARAMS_PER_S + (
            states.trainable_params_per_gpu * (grad_b + weight_b) * gpus_per_node / OFFLOAD_PCIE_BYTES_PER_S
        )
    else:
        optimizer = optimizer_seconds(accelerator, states.trainable_params_per_gpu, precision)
    compute_total = micro_batches * (forward + backward + recompute + overhead)
    bubble = (pp - 1) * stage
    breakdown = {
        "compute": compute_total * (1 - stage_times.memory_bound_share),
        "memory-bound kernels": compute_total * stage_times.memory_bound_share,
        "tensor-parallel all-reduce": micro_batches * tp_seconds,
        "pipeline send/receive": micro_batches * p2p,
        "pipeline bubble": bubble,
        **{f"exposed {name}": seconds for name, seconds in exposed.items()},
        "optimizer": optimizer,
    }
    breakdown = {k: v for k, v in breakdown.items() if v > 0}
    step = (micro_batches + pp - 1) * stage + sum(exposed.values()) + optimizer
    sequences = micro_batches * plan.micro_batch * dp
    tokens_per_second = sequences * seq_len / step
    mfu = (
        tokens_per_second
        * model_flops_per_token(arch, seq_len, plan.finetune)
        / (gpus * _peak_flops(accelerator, precision))
    )
    errors = shipped_model().errors_for(eff.basis, accelerator.software_stack)
    return LLMTrainingPrediction(
        tokens_per_second=tokens_per_second,
        tokens_per_second_low=tokens_per_second * math.exp(errors.q10),
        tokens_per_second_high=tokens_per_second * math.exp(errors.q90),
        samples_per_second=sequences / step,
        step_time_s=step,
        mfu=mfu,
        memory_per_gpu_gib=memory.total / GIB,
        fits=memory.fits,
        fit_reason="" if memory.fits else _miss_reason(memory, plan, gpus),
        bottleneck=_bottleneck(breakdown),
        basis=eff.basis,
        breakdown_s=breakdown,
        plan=plan,
        gpus=gpus,
        global_batch=sequences,
        memory_gib=memory.to_gib(),
        largest_micro_batch=memory.largest_micro_batch,
    )


def _miss_reason(memory: MemoryPerGPU, plan: TrainingPlan, gpus: int) -> str:
    mode = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}[plan.finetune]
    return (
        f"needs {memory.total / GIB:.1f} GiB per GPU for {mode} with {plan.text(gpus)}; "
        f"has {memory.capacity / GIB:.1f} GiB"
    )


def _bottleneck(breakdown: dict[str, float]) -> str:
    groups = {
        "compute": breakdown.get("compute", 0.0),
        "memory-bandwidth": breakdown.get("memory-bound kernels", 0.0) + breakdown.get("optimizer", 0.0),
        "communication": sum(v for k, v in breakdown.items() if "all-" in k or "reduce" in k or "send" in k),
        "pipeline-bubble": breakdown.get("pipeline bubble", 0.0),
    }
    return max(groups, key=lambda k: groups[k])
