"""Time of one optimizer step of a training plan, and the prediction built on it.

Per micro-batch, the busiest pipeline stage runs its layers forward and backward (plus one more
forward of each layer under activation checkpointing), its tensor-parallel all-reduces (2 in the
forward and 2 in the backward of every layer, Megatron-style, partly hidden when the plan
overlaps them) and its pipeline sends. 1F1B runs m micro-batches in (m + p − 1) stage-times: the
bubble is (p − 1) of them. Data-parallel collectives hide behind the compute they run beside, up
to a calibrated share (``communication_overlap``): FSDP's per-micro-batch gathers and scatters
behind the micro-batch, the once-a-step gradient reductions (DDP, ZeRO) behind the last backward,
ZeRO's weight gather behind the next first forward; what is left is exposed. Under
``BACKWARD_POST`` the backward's gather is exposed whole. The optimizer steps each GPU's shard.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm.causal_attention import skipped_attention_flops
from perdollar.predict.llm.compiled import compiled_adapter_saved_bytes_per_token
from perdollar.predict.llm.context_expert import expert_params_share
from perdollar.predict.llm.device import optimizer_seconds
from perdollar.predict.llm.feasibility import (  # noqa: F401  (re-exported: callers import them here)
    expert_parallel_problem,
    global_batch_problem,
    plan_problem,
)
from perdollar.predict.llm.fp8 import FP8_PRECISIONS
from perdollar.predict.llm.fp8_recipes import fp8_summary
from perdollar.predict.llm.frameworks import LOSS_EXTRA_BYTES_PER_LOGIT
from perdollar.predict.llm.lora import adapter_saved_bytes_per_token
from perdollar.predict.llm.memory import (
    GIB,
    MemoryPerGPU,
    ModelStates,
    memory_per_gpu,
    model_states,
    state_bytes_per_param,
)
from perdollar.predict.llm.mfu_limits import held_remark, mfu_limit
from perdollar.predict.llm.moe_training import expert_data_parallel
from perdollar.predict.llm.optimizers import paging_seconds
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.stage import (
    LLMEfficiency,
    data_parallel_seconds,
    exposed_collectives,
    pipeline_bubble_stages,
    stage_times,
)
from perdollar.predict.llm.training_bands import prediction_band
from perdollar.profile.llm_trace import LayerTrace, layer_trace
from perdollar.workload.llm.architecture import DecoderArchitecture

# Host-side AdamW with offloaded states: parameters per second per host (an assumption of the
# order ZeRO-Offload reports for its vectorised CPU Adam), and PCIe at an achievable 20 GB/s.
CPU_ADAM_PARAMS_PER_S = 1.0e9
OFFLOAD_PCIE_BYTES_PER_S = 20e9
FP8_QUANTISE = "FP8 quantise (casts, transposed copies)"  # the breakdown's part for the FP8 recipe's casts


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
    bottleneck: str  # compute | memory-bandwidth (kernels and optimizer) | communication | pipeline-bubble
    basis: str  # spec | calibrated | measured
    breakdown_s: dict[str, float]
    plan: TrainingPlan
    gpus: int = 1
    global_batch: int = 1  # sequences per optimizer step, as the plan runs it
    memory_gib: dict[str, float] = field(default_factory=dict)
    largest_micro_batch: int = 0
    # A mixture of experts' own parts of one micro-batch (perdollar.predict.llm.moe_training)
    moe: dict[str, float | bool] = field(default_factory=dict)
    # FP8 training's recipe, its products in FP8 and what stays bf16 (perdollar.predict.llm.fp8_recipes)
    fp8: dict[str, object] = field(default_factory=dict)
    memory_tight: bool = False  # runs only inside the estimate's memory reserve (fit_reason says how far)
    mfu_remark: str = ""  # held to the best published MFU for the chip and scale (mfu_limits), and why
    band_group: str = ""  # the held-out runs that set the band of tokens per second (training_bands)
    band_rows: int = 0


MFU_CONVENTION = (
    "model FLOPs per token = 6·N + 12·layers·(heads·head_dim)·seq_len (N: parameters a token passes "
    "through, the input embedding excluded; PaLM's convention; 4·N + 8·… for LoRA/QLoRA, which compute "
    "no weight gradients of the base), over the GPUs' dense peak of the precision (bf16 for fp8 runs)"
)


def mfu_formula(finetune: str) -> str:
    """The model FLOPs per token the MFU of a ``finetune`` run counts, in a few words."""
    if finetune == "full":
        return "6·N + attention FLOPs per token"
    # Frozen base: forward 2N and the activations' gradient 2N, no weight gradient.
    return "4·N + attention FLOPs per token (frozen base: no weight gradients)"


def model_flops_per_token(arch: DecoderArchitecture, seq_len: int, finetune: str = "full") -> float:
    """Forward + backward FLOPs per token by the convention of :data:`MFU_CONVENTION`."""
    matmul_params = arch.active_params
    passes = 3.0 if finetune == "full" else 2.0  # forward, activation gradient, weight gradient
    attention = 4 * arch.num_layers * arch.num_attention_heads * arch.head_dim * seq_len
    return passes * (2.0 * matmul_params + attention)


def _peak_flops(accelerator: Accelerator, precision: str) -> float:
    # FP8 runs are reported against the bf16 peak, as published FP8 training tables do.
    if precision in FP8_PRECISIONS:
        precision = "bf16"
    dtype = {"amp-bf16": "bf16", "amp-fp16": "fp16"}.get(precision, precision)
    return (accelerator.peak_tflops(dtype) or accelerator.peak_tflops("fp32") or 1.0) * 1e12


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
    attention_kernel: str = "flash2",
) -> tuple[MemoryPerGPU, int, ModelStates]:
    """Memory per GPU of ``plan``, the micro-batches per optimizer step it runs, and its model states."""
    gpus = gpus_per_node * nodes
    data_parallel = plan.data_parallel_size(gpus)
    micro_batches = max(math.ceil(global_batch / (plan.micro_batch * data_parallel)), 1)
    states = model_states(
        arch,
        plan,
        data_parallel=plan.gradient_group_size(gpus),
        data_parallel_in_node=plan.data_parallel_in_host(gpus_per_node, nodes),
        precision=precision,
    )
    # Context parallelism: each rank keeps the activations of its 1/c of every sequence.
    local_len = seq_len // plan.context_parallel
    per_sequence = layer_trace(arch, 1, local_len, precision, train_base=plan.finetune == "full")
    # Unfused attention keeps its 16-bit probabilities for the backward: heads × sequence² a layer.
    scores = 2.0 * arch.num_attention_heads * local_len * seq_len if attention_kernel == "unfused" else 0.0
    layer_saved, other_saved = framework_saved_bytes(arch, plan, per_sequence, local_len)
    kept_input = per_sequence.hidden_state_bytes
    if plan.activation_checkpointing and plan.resolved_framework.offloads_checkpoints:
        # The layers' inputs wait in host memory; the one coming back for its recompute is on the GPU.
        layer_saved, kept_input = layer_saved + kept_input, 0.0
    memory = memory_per_gpu(
        arch,
        plan,
        states=states,
        layer_saved_per_sequence=layer_saved + scores,
        other_saved_per_sequence=other_saved,
        hidden_state_per_sequence=kept_input,
        layer_selective_per_sequence=per_sequence.layer_saved_selective_bytes + scores,
        micro_batches=micro_batches,
        accelerator_memory_gib=accelerator.memory_gib,
        headroom=efficiency.memory_headroom,
    )
    return memory, micro_batches, states


def framework_saved_bytes(
    arch: DecoderArchitecture, plan: TrainingPlan, trace: LayerTrace, seq_len: int
) -> tuple[float, float]:
    """(one layer's, the rest's) saved bytes per sequence under the plan's framework: what the eager
    code keeps where it fuses nothing, the adapters' own, and what its loss holds. Compiling an
    eager framework changes the adapters' and the loss's (:mod:`perdollar.predict.llm.compiled`);
    the model's own saved tensors are counted as its eager code keeps them."""
    framework = plan.resolved_framework
    fused = framework.fused_chains
    layer = trace.layer_saved_bytes if fused else trace.layer_saved_eager_bytes
    other = trace.other_saved_bytes if fused else trace.other_saved_eager_bytes
    if plan.finetune != "full":
        compiled = framework.compiles_eager_code
        adapters = compiled_adapter_saved_bytes_per_token if compiled else adapter_saved_bytes_per_token
        layer += adapters(arch, plan.lora_rank, framework) * seq_len
    other += LOSS_EXTRA_BYTES_PER_LOGIT[framework.loss] * arch.vocab_size * seq_len
    return layer, max(other, 0.0)


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
    attention_kernel: str = "flash2",
) -> LLMTrainingPrediction:
    """Throughput, memory and bottleneck of ``plan`` on ``nodes`` hosts of ``gpus_per_node`` GPUs."""
    eff = efficiency or LLMEfficiency()
    problem = plan_problem(plan, arch, gpus_per_node, nodes, global_batch)
    if not problem and seq_len % (2 * plan.context_parallel) and plan.context_parallel > 1:
        cp = plan.context_parallel
        problem = f"context parallel {cp} needs sequences that split into 2 × {cp} equal chunks"
    if problem:
        raise PerdollarError(
            f"the plan {plan.token()!r} cannot run here: {problem}", "choose another plan or cluster"
        )
    gpus = gpus_per_node * nodes
    pp = plan.pipeline_parallel
    dp = plan.gradient_group_size(gpus)  # the ranks whose gradients are reduced together
    dp_in_node = plan.data_parallel_in_host(gpus_per_node, nodes)
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
        attention_kernel=attention_kernel,
    )
    plan = replace(plan, gradient_accumulation=micro_batches)
    times = stage_times(
        arch, accelerator, plan, seq_len, precision, eff, network_gbps, efa_interfaces, interconnect,
        attention_kernel, nodes=nodes, gpus_per_node=gpus_per_node,
    )  # fmt: skip
    forward, backward, recompute = times.forward, times.backward, times.recompute
    tp_seconds, p2p, overhead, stage = times.tensor_parallel, times.p2p, times.overhead, times.total

    weight_b, grad_b, _ = state_bytes_per_param(precision)
    trained = states.trainable_params_per_gpu * (
        dp if plan.strategy in ("zero1", "zero2", "fsdp") else dp_in_node if plan.strategy == "hsdp" else 1
    )
    grad_bytes = trained * grad_b * states.gradient_share
    weight_bytes = states.weights * (
        dp if plan.strategy == "fsdp" else dp_in_node if plan.strategy == "hsdp" else 1
    )
    if plan.strategy in ("zero1", "zero2"):
        weight_bytes = trained * weight_b
    layers_per_stage = max(arch.num_layers // pp, 1)
    spans = plan.hosts_per_stage(nodes) > 1
    expert_share = expert_params_share(arch) if plan.expert_parallel > 1 and plan.finetune == "full" else 0.0
    if expert_share:  # the whole model's bytes a model-parallel split holds, the experts then taken apart
        grad_bytes = arch.total_params / (plan.tensor_parallel * pp) * grad_b * states.gradient_share
        weight_bytes = arch.total_params / (plan.tensor_parallel * pp) * weight_b
    collectives = data_parallel_seconds(
        plan, grad_bytes * (1 - expert_share), weight_bytes * (1 - expert_share), dp, dp_in_node, spans,
        times.intra, times.inter, layers_per_stage,
    )  # fmt: skip
    if expert_share:
        # A rank's experts (1/E_p of them) are reduced, and sharded, over the ranks holding the same
        # experts: the expert-data-parallel group, strided over the hosts beside the expert ranks.
        ep = plan.expert_parallel
        expert_dp = expert_data_parallel(plan, dp)
        expert_dp_in_node = max(dp_in_node // ep, 1)
        experts = data_parallel_seconds(
            plan, grad_bytes * expert_share / ep, weight_bytes * expert_share / ep, expert_dp,
            expert_dp_in_node, expert_dp > expert_dp_in_node, times.intra, times.inter, layers_per_stage,
        )  # fmt: skip
        collectives = collectives.merged(experts, prefix="expert ")
    if plan.data_parallel_comm == "blocking":  # +blocking: each waits for the compute before it
        collectives = collectives.blocked()
    exposed = exposed_collectives(
        collectives, micro_batches, eff.communication_overlap, forward, backward, recompute
    )

    if plan.cpu_offload:
        optimizer = states.trainable_params_per_gpu * gpus_per_node / CPU_ADAM_PARAMS_PER_S + (
            states.trainable_params_per_gpu * (grad_b + weight_b) * gpus_per_node / OFFLOAD_PCIE_BYTES_PER_S
        )
    else:
        optimizer = optimizer_seconds(
            accelerator, states.trainable_params_per_gpu, precision, plan.resolved_optimizer.name
        )
        # A paged optimizer's spilled states cross PCIe in for the step and out again.
        optimizer += paging_seconds(memory.paged_out)
    compute_total = micro_batches * (forward + backward + recompute + overhead)
    bubble = pipeline_bubble_stages(pp, plan.virtual_stages) * stage
    # The quantising kernels are memory-bound: shown apart from the rest of the memory-bound time.
    memory_bound = compute_total * times.memory_bound_share
    casts = min(micro_batches * times.fp8_casts, memory_bound)
    breakdown = {
        "compute": compute_total * (1 - times.memory_bound_share),
        "memory-bound kernels": memory_bound - casts,
        FP8_QUANTISE: casts,
        "tensor-parallel all-reduce": micro_batches * tp_seconds,
        "context-parallel ring": micro_batches * times.context_ring,
        "MoE router and permute": micro_batches * times.moe.routing_s,
        "MoE grouped GEMM (tile padding, busiest rank)": micro_batches * times.moe.grouped_gemm_s,
        "expert all-to-all": micro_batches * times.expert_all_to_all,
        "pipeline send/receive": micro_batches * p2p,
        "pipeline bubble": bubble,
        **{f"exposed {name}": seconds for name, seconds in exposed.items()},
        "optimizer": optimizer,
    }
    step = micro_batches * stage + bubble + sum(exposed.values()) + optimizer
    sequences = micro_batches * plan.micro_batch * plan.data_parallel_size(gpus)
    flops_per_token = model_flops_per_token(arch, seq_len, plan.finetune)
    mfu = sequences * seq_len / step * flops_per_token / (gpus * _peak_flops(accelerator, precision))
    limit = mfu_limit(accelerator.architecture, gpus)
    mfu_remark = ""
    # The model's own figure above the best published MFU is held to it (before the user's runs
    # calibrate it: a run measured faster than the limit is reproduced as measured), counted at the
    # FLOPs its attention kernel computes: a long causal sequence is no work beyond what was shown.
    skipped = skipped_attention_flops(arch, seq_len, plan.finetune, attention_kernel)
    kernel_mfu = mfu * (1.0 - skipped / flops_per_token)
    if precision not in FP8_PRECISIONS and kernel_mfu > limit.limit:
        mfu_remark = held_remark(kernel_mfu, limit)
        held = step * kernel_mfu / limit.limit
        breakdown["held to the published MFU limit"] = held - step
        step = held
    # A calibration from the user's own runs scales the whole step, each part alike.
    breakdown = {k: v / eff.calibration_factor for k, v in breakdown.items() if v > 0}
    step /= eff.calibration_factor
    mfu = sequences * seq_len / step * flops_per_token / (gpus * _peak_flops(accelerator, precision))
    tokens_per_second = sequences * seq_len / step
    band = prediction_band(eff.basis, arch.is_moe, accelerator, plan.resolved_framework.name)
    return LLMTrainingPrediction(
        tokens_per_second=tokens_per_second,
        tokens_per_second_low=tokens_per_second * band.low,
        tokens_per_second_high=tokens_per_second * band.high,
        samples_per_second=sequences / step,
        step_time_s=step,
        mfu=mfu,
        memory_per_gpu_gib=memory.total / GIB,
        fits=memory.fits,
        fit_reason=_fit_remark(memory, plan, gpus),
        bottleneck=_bottleneck(breakdown),
        basis=eff.basis,
        breakdown_s=breakdown,
        plan=plan,
        gpus=gpus,
        global_batch=sequences,
        memory_gib=memory.to_gib(),
        largest_micro_batch=memory.largest_micro_batch,
        moe=times.moe.to_dict() if arch.is_moe else {},
        fp8=fp8_summary(plan, accelerator, precision, breakdown.get(FP8_QUANTISE, 0.0)),
        memory_tight=memory.tight,
        mfu_remark=mfu_remark,
        band_group=band.group,
        band_rows=band.rows,
    )


def _fit_remark(memory: MemoryPerGPU, plan: TrainingPlan, gpus: int) -> str:
    """Why the plan does not fit, or how tight it is ('' when it fits with room)."""
    if not memory.fits:
        return _miss_reason(memory, plan, gpus)
    return memory.remark() if memory.tight else ""


def _miss_reason(memory: MemoryPerGPU, plan: TrainingPlan, gpus: int) -> str:
    # "full" is pre-training and full fine-tuning alike: every weight trained.
    mode = {"full": "full training", "lora": "LoRA", "qlora": "QLoRA"}[plan.finetune]
    return (
        f"needs {memory.total / GIB:.1f} GiB per GPU for {mode} with {plan.text(gpus)}; "
        f"has {memory.capacity / GIB:.1f} GiB ({memory.limit / GIB:.1f} at the tightest)"
    )


def _bottleneck(breakdown: dict[str, float]) -> str:
    groups = {
        "compute": breakdown.get("compute", 0.0),
        "memory-bandwidth": breakdown.get("memory-bound kernels", 0.0) + breakdown.get("optimizer", 0.0),
        "communication": sum(
            v for k, v in breakdown.items() if any(w in k for w in ("all-", "reduce", "send", "ring"))
        ),
        "pipeline-bubble": breakdown.get("pipeline bubble", 0.0),
    }
    return max(groups, key=lambda k: groups[k])
