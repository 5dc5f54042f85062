"""Language models on Trainium, Inferentia, TPU and Gaudi through their own stacks.

Training: the stack's fitted share of the bf16 peak over every chip of the cluster, with the
smallest tensor-parallel degree the stack allows whose shards fit the chip's memory. Serving: the
GPU serving model (prefill, decode, KV capacity, SLO bisection) with the stack's own fitted
fractions, over the replica shapes the stack allows. A model, number format or shape the stack
does not support is a row excluded with that reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator, InstanceType
from perdollar.predict.accelerator_stacks import (
    SERVING_STACKS,
    TRAINING_STACKS,
    USABLE_MEMORY_SHARE,
    TrainingStack,
    chip_problem,
    fit_note,
    model_flops_per_token,
    model_problem,
    serving_degrees,
    serving_format_problem,
    serving_kv_problem,
    slice_problem,
)
from perdollar.predict.llm.frameworks import framework_for
from perdollar.predict.llm.optimizers import DEFAULT_OPTIMIZER
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.training_bands import training_band
from perdollar.predict.llm_serving.engines import serving_engine_for
from perdollar.predict.llm_serving.features import Speculation
from perdollar.predict.llm_serving.formats import kv_precision_name, serving_format
from perdollar.predict.llm_serving.frame import ReplicaRate
from perdollar.predict.maxtext_tpu import SYSTEMS, SliceRun, maxtext_step_s, training_stack_text
from perdollar.predict.nxd_trainium import FITTED_EFA_GBPS, NxdRun, nxd_stack_text, nxd_step
from perdollar.workload.llm.architecture import DecoderArchitecture
from perdollar.workload.llm.workload import ATTENTION_KERNELS, LLMWorkload

GIB = 1024**3
# Mixed-precision Adam: bf16 weights and gradients, fp32 master weights and two moments.
WEIGHT_AND_GRADIENT_BYTES = 4.0
OPTIMIZER_BYTES = 12.0
# Activation bytes per token per hidden unit of one layer's working set in 16 bits, attention
# fused (Korthikanti et al. 2022, "Reducing Activation Recomputation", table 2 without the s/h term).
LAYER_WORKING_BYTES = 34.0
# The band a training prediction carried before the held-out table (predict/llm/training_bands.py);
# benchmarks/llm_training_bands.py still reports its coverage.
TRAINING_BAND = (0.7, 1.3)


def training_stack_problem(accelerator: Accelerator, workload: LLMWorkload) -> str:
    """Why the chip's training stack cannot train ``workload`` at all ('' when it can)."""
    stack = TRAINING_STACKS.get(accelerator.software_stack)
    if stack is None:
        return f"no language-model training stack for {accelerator.software_stack} is modelled"
    if stack.model_flops_fraction is None:
        return f"{stack.label}: no published training table fitted yet, so no prediction"
    problem = chip_problem(accelerator, stack.label, stack.chips) or _gpu_settings_problem(
        accelerator, stack, workload
    )
    if problem:
        return problem
    if workload.finetune != "full":
        return f"{stack.label}: LoRA/QLoRA fine-tuning is not modelled on {accelerator.software_stack}"
    if workload.precision not in stack.precisions:
        return f"{stack.label} does not train in {workload.precision} (it trains in bf16)"
    return model_problem(workload.architecture.model_type, stack.label, stack.model_types)


def _gpu_settings_problem(accelerator: Accelerator, stack: TrainingStack, workload: LLMWorkload) -> str:
    """Why a setting of the GPU planner asked for cannot apply under the chip's own stack ('' when
    none was asked): the stack's record knows no framework, optimizer or attention kernel but its own."""
    if workload.framework:
        if workload.framework.startswith("+"):
            return f"torch.compile does not apply on {accelerator.key}: it trains under {stack.label}"
        framework = framework_for(workload.framework, workload.finetune)
        if accelerator.software_stack not in framework.stacks:
            return f"{framework.title} does not run on {accelerator.key}: it trains under {stack.label}"
    if workload.optimizer and workload.optimizer != DEFAULT_OPTIMIZER:
        return f"{stack.label} is modelled with {DEFAULT_OPTIMIZER} only, not {workload.optimizer}"
    if workload.attention_kernel != ATTENTION_KERNELS[0]:  # the default: the GPU planner's
        return f"{stack.label} runs its own attention kernels, not {workload.attention_kernel}"
    return ""


def _states_gib(
    arch: DecoderArchitecture, stack: TrainingStack, tp: int, chips: int, chips_per_node: int
) -> float:
    """Weights, gradients and optimizer state per chip. MaxText shards them over one slice's chips
    (FSDP over ICI) and replicates them across slices (data parallel over DCN); NxD shards the
    optimizer state over every data-parallel rank."""
    params = float(arch.total_params)
    if stack.strategy == "fsdp":
        return params * (WEIGHT_AND_GRADIENT_BYTES + OPTIMIZER_BYTES) / chips_per_node / GIB
    return (params * WEIGHT_AND_GRADIENT_BYTES / tp + params * OPTIMIZER_BYTES / chips) / GIB


def _saved_inputs_gib(arch: DecoderArchitecture, tp: int, micro_batch: int, seq_len: int) -> float:
    """Full activation checkpointing keeps each layer's 16-bit input for the backward."""
    return micro_batch * seq_len * arch.hidden_size * 2.0 * arch.num_layers / tp / GIB


def _working_gib(arch: DecoderArchitecture, tp: int, micro_batch: int, seq_len: int) -> float:
    """One layer's working set, live while it runs forward or backward."""
    return micro_batch * seq_len * arch.hidden_size * LAYER_WORKING_BYTES / tp / GIB


def _memory_per_chip_gib(
    arch: DecoderArchitecture, stack: TrainingStack, tp: int, chips: int, micro_batch: int, seq_len: int,
    chips_per_node: int | None = None,
) -> float:  # fmt: skip
    states = _states_gib(arch, stack, tp, chips, chips_per_node or chips)
    return (
        states
        + _saved_inputs_gib(arch, tp, micro_batch, seq_len)
        + _working_gib(arch, tp, micro_batch, seq_len)
    )


@dataclass(frozen=True, slots=True)
class StackPlan:
    """The plan a stack runs, its memory per chip, and where the saved activations live.

    offloaded: MaxText's offloading remat policy (``decoder_layer_input: offload``) keeps each
    layer's input in the host's memory, not the chip's; host_gib is what that takes per chip."""

    plan: TrainingPlan | None
    memory_gib: float
    problem: str
    offloaded: bool = False
    host_gib: float = 0.0


def stack_plan_problem(stack: TrainingStack, plan: TrainingPlan) -> str:
    """Why a fixed ``plan`` is not one the stack's record runs ('' when it is): its strategy with full
    activation checkpointing, one of its tensor-parallel degrees and no other model parallelism (the
    micro-batch is the plan's)."""
    runs = TrainingPlan(strategy=stack.strategy, tensor_parallel=plan.tensor_parallel,
                        activation_checkpointing=True, micro_batch=plan.micro_batch,
                        gradient_accumulation=plan.gradient_accumulation)  # fmt: skip
    if plan == runs and plan.tensor_parallel in stack.tensor_parallel:
        return ""
    degrees = ", ".join(map(str, stack.tensor_parallel))
    return (
        f"{stack.label} runs {stack.strategy}+ac with tensor parallel {degrees} and no other model "
        f"parallelism, not {plan.token()}"
    )


def best_training_plan(
    arch: DecoderArchitecture, accelerator: Accelerator, stack: TrainingStack, *, chips_per_node: int,
    nodes: int, seq_len: int, global_batch: int, degrees: tuple[int, ...] | None = None, micro_batch: int = 1,
) -> tuple[TrainingPlan | None, float, str]:  # fmt: skip
    """(plan, memory per chip GiB, problem): the smallest tensor-parallel degree that fits (of
    ``degrees`` where given, else of the stack's)."""
    found = best_stack_plan(arch, accelerator, stack, chips_per_node=chips_per_node, nodes=nodes,
                            seq_len=seq_len, global_batch=global_batch, degrees=degrees,
                            micro_batch=micro_batch)  # fmt: skip
    return found.plan, found.memory_gib, found.problem


def best_stack_plan(
    arch: DecoderArchitecture, accelerator: Accelerator, stack: TrainingStack, *, chips_per_node: int,
    nodes: int, seq_len: int, global_batch: int, degrees: tuple[int, ...] | None = None, micro_batch: int = 1,
) -> StackPlan:  # fmt: skip
    """The smallest tensor-parallel degree that fits the chip's memory, each degree tried with the
    saved activations in the chip's memory and then, on a TPU whose host memory is published, in the
    host's (MaxText's offloading remat policy)."""
    chips = chips_per_node * nodes
    problem = slice_problem(accelerator, chips_per_node)
    if problem:
        return StackPlan(None, math.nan, problem)
    usable = accelerator.memory_gib * USABLE_MEMORY_SHARE
    system = SYSTEMS.get(accelerator.key) if stack.software_stack == "xla" else None
    host_usable = (system.host_memory_gib_per_chip or 0.0) * USABLE_MEMORY_SHARE if system else 0.0
    nearest = math.inf
    tried = degrees or stack.tensor_parallel
    for tp in tried:
        if tp > chips_per_node or chips_per_node % tp or arch.num_attention_heads % tp:
            continue
        data_parallel = chips // tp
        if global_batch < data_parallel * micro_batch:
            continue
        memory = _memory_per_chip_gib(arch, stack, tp, chips, micro_batch, seq_len, chips_per_node)
        host = _saved_inputs_gib(arch, tp, micro_batch, seq_len)
        nearest = min(nearest, memory - host if host_usable else memory)
        accumulation = max(global_batch // (data_parallel * micro_batch), 1)
        plan = TrainingPlan(strategy=stack.strategy, tensor_parallel=tp, activation_checkpointing=True,
                            micro_batch=micro_batch, gradient_accumulation=accumulation)  # fmt: skip
        if memory <= usable:
            return StackPlan(plan, memory, "")
        on_chip = memory - host
        if host_usable and on_chip <= usable and host <= host_usable:
            return StackPlan(plan, on_chip, "", offloaded=True, host_gib=host)
    if math.isinf(nearest):
        return StackPlan(
            None,
            math.nan,
            (
                f"{stack.label}: no tensor-parallel degree in {tried} fits {chips_per_node} "
                f"chips per node, the model's {arch.num_attention_heads} heads and a global batch of "
                f"{global_batch}" + (f" at micro-batch {micro_batch}" if micro_batch > 1 else "")
            ),
        )
    offload = " even with the saved activations offloaded to host memory" if host_usable else ""
    return StackPlan(
        None,
        nearest,
        (
            f"needs {nearest:.1f} GiB per chip for full training under {stack.label} with its largest "
            f"tensor-parallel degree{offload}; has {usable:.1f} GiB"
        ),
    )


def training_row(
    instance: InstanceType, accelerator: Accelerator, workload: LLMWorkload, nodes: int, *,
    fixed: TrainingPlan | None = None, tensor_parallel: int | None = None,
) -> dict[str, object]:  # fmt: skip
    """One LLM_COLUMNS row for ``nodes`` × ``instance`` under the chip's own training stack: with the
    ``fixed`` plan or ``tensor_parallel`` degree asked for, or excluded saying why the stack cannot."""
    stack = TRAINING_STACKS[accelerator.software_stack]
    arch = workload.architecture
    chips_per_node = int(instance.accelerator_count)
    excluded = stack_plan_problem(stack, fixed) if fixed is not None else ""
    degree = fixed.tensor_parallel if fixed is not None else tensor_parallel
    if degree is not None and degree not in stack.tensor_parallel:
        excluded = excluded or (
            f"{stack.label} takes tensor parallel {', '.join(map(str, stack.tensor_parallel))}, not {degree}"
        )
    micro_batch = fixed.micro_batch if fixed is not None else workload.micro_batch or 1
    found = StackPlan(None, math.nan, "") if excluded else best_stack_plan(
        arch, accelerator, stack, chips_per_node=chips_per_node, nodes=nodes, seq_len=workload.seq_len,
        global_batch=workload.global_batch, degrees=(degree,) if degree else None, micro_batch=micro_batch,
    )  # fmt: skip
    plan, memory, problem = found.plan, found.memory_gib, found.problem
    row: dict[str, object] = {"cloud": instance.cloud, "instance_type": instance.name,
                           "accelerator_key": instance.accelerator_key, "nodes": nodes,
                           "accelerators_per_node": float(chips_per_node), "excluded_reason": excluded,
                           "max_batch_that_fits": None, "breakdown_s": {},
                           "memory_per_gpu_gib": memory}  # fmt: skip
    if plan is None:
        nan = math.nan
        return row | {"samples_per_second": nan, "samples_per_second_low": nan,
                      "samples_per_second_high": nan,
                      "basis": "spec", "bottleneck": "", "step_time_s": nan, "compute_time_s": nan,
                      "communication_time_s": nan, "fits": False, "fit_reason": problem,
                      "tokens_per_second": nan, "sequences_per_second": nan, "mfu": nan, "plan": None,
                      "plan_text": ""}  # fmt: skip
    chips = chips_per_node * nodes
    # The stacks' model-FLOPs fractions were fitted with the input embedding counted in N.
    params = float(arch.active_params + arch.lookup_params)
    per_token = model_flops_per_token(params, arch.num_layers, arch.hidden_size, workload.seq_len)
    tokens_per_step = float(workload.global_batch * workload.seq_len)
    peak = (accelerator.peak_bf16_tflops or 0.0) * 1e12
    communication = 0.0
    if stack.software_stack == "xla":
        offloaded_gib = found.host_gib * plan.gradient_accumulation if found.offloaded else 0.0
        run = SliceRun(chips_per_node, nodes, float(arch.total_params), tokens_per_step / chips)
        compute, communication, offload = maxtext_step_s(accelerator, run, per_token, offloaded_gib)
        step = max(compute, offload) + communication
        bottleneck = (
            "host offload"
            if offload > compute
            else ("communication" if communication > compute else "compute")
        )
    elif stack.software_stack == "neuron":
        network = float(instance.network_gbps or FITTED_EFA_GBPS)
        nxd_run = NxdRun(chips_per_node, nodes, plan.tensor_parallel, 1, stack.strategy == "zero1",
                     plan.micro_batch, workload.global_batch, workload.seq_len, float(arch.total_params),
                     arch.num_layers, arch.hidden_size, network)  # fmt: skip
        terms = nxd_step(accelerator, nxd_run, per_token)
        compute, communication, step = terms.compute_s, terms.communication_s, terms.step_s
        bottleneck = "communication" if communication > compute else "compute"
    else:
        compute = tokens_per_step * per_token / ((stack.model_flops_fraction or 0.0) * peak * chips)
        step, bottleneck = compute, "compute"
    tokens = tokens_per_step / step
    text = f"{stack.label}: {plan.text(chips, framework=False)}".replace(" GPU", " chip")
    if found.offloaded:
        text += f", saved activations offloaded to host memory ({found.host_gib:.1f} GiB a chip)"
    if nodes > 1 and stack.software_stack == "xla":
        text += f", data parallel over DCN between {nodes} slices"
    note = fit_note(accelerator, stack)
    text = f"{text} ({note})" if note else text
    band = training_band(moe=arch.is_moe, stack=accelerator.software_stack, framework=stack.name,
                         family=accelerator.architecture)  # fmt: skip
    return row | {
        "samples_per_second": tokens, "samples_per_second_low": tokens * band.low,
        "samples_per_second_high": tokens * band.high, "basis": "spec", "bottleneck": bottleneck,
        "band_group": band.group, "band_rows": band.rows,
        "step_time_s": step, "compute_time_s": compute, "communication_time_s": communication, "fits": True,
        "fit_reason": "", "tokens_per_second": tokens, "sequences_per_second": tokens / workload.seq_len,
        "mfu": tokens * per_token / (peak * chips), "plan": plan, "plan_text": text,
        "stack": nxd_stack_text(accelerator, stack) if stack.software_stack == "neuron"
        else training_stack_text(accelerator, stack), "activations_offloaded": found.offloaded,
    }  # fmt: skip


def serving_stack_problem(accelerator: Accelerator, arch: DecoderArchitecture, precision: str) -> str:
    """Why the chip's serving stack cannot serve ``arch`` in ``precision`` ('' when it can)."""
    stack = SERVING_STACKS.get(accelerator.software_stack)
    if stack is None:
        return f"no language-model serving stack for {accelerator.software_stack} is modelled"
    return (
        chip_problem(accelerator, stack.label, stack.chips)
        or model_problem(arch.model_type, stack.label, stack.model_types)
        or serving_format_problem(stack, accelerator, precision)
    )


__all__ = [
    "best_training_plan",
    "nongpu_serving_rows",
    "serving_degrees",
    "serving_engine_for",
    "serving_stack_problem",
    "stack_plan_problem",
    "training_row",
    "training_stack_problem",
]


def nongpu_serving_rows(
    arch: DecoderArchitecture, catalog: Catalog, *, input_tokens: int, output_tokens: int, rps: float,
    ttft_p99_ms: float | None, tpot_p99_ms: float | None, precisions: tuple[str, ...],
    prefix_share: float = 0.0, speculation: Speculation | None = None, kv_precision: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """The serving frame's rows for every instance whose chip runs a non-GPU stack: each replica
    shape the stack allows, sized by the serving model with the stack's fitted fractions (the
    prefix cache and speculative decoding as on a GPU; a KV cache the record does not hold is a
    row excluded with that reason)."""
    from perdollar.predict.llm_serving.frame import _row, replica_rate
    from perdollar.predict.llm_serving.load import RequestShape
    from perdollar.predict.llm_serving.timing import GroupShape

    work = RequestShape(input_tokens, output_tokens, prefix_share, speculation)
    instances = catalog.instances_frame()
    instances = instances[instances["accelerator_key"].notna() & (instances["accelerator_count"] >= 1)]
    rows = []
    cache: dict[tuple[str, int, str], ReplicaRate] = {}
    for record in instances.itertuples(index=False):
        accelerator = catalog.accelerator(str(record.accelerator_key))
        if accelerator.software_stack in ("cuda", "rocm", "cpu"):
            continue
        count = int(record.accelerator_count)
        stack = SERVING_STACKS.get(accelerator.software_stack)
        engine = serving_engine_for(stack) if stack else None
        for degree in serving_degrees(accelerator, count) or (count,):
            for precision in precisions:
                key = (accelerator.key, degree, precision)
                if key not in cache:
                    problem = serving_stack_problem(accelerator, arch, precision)
                    if not problem and stack is not None:
                        problem = serving_kv_problem(stack, kv_precision)
                    if not problem and stack is not None and not stack.fitted:
                        # Round starting fractions would rank a chip on a guess; say so instead.
                        problem = f"{stack.label}: no published serving table fitted yet, so no prediction"
                    if problem or engine is None:
                        cache[key] = ReplicaRate(0.0, None, 0.0, 0.0, 0, 0.0, "unsupported", problem)
                    else:
                        cache[key] = replica_rate(
                            arch, accelerator, precision, work, GroupShape(tensor_parallel=degree),
                            ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms,
                            efficiency=engine.step_efficiency(), engine=engine, kv_precision=kv_precision,
                        )  # fmt: skip
                row = _row(record, count, degree, precision, cache[key], rps, work)
                name = stack.name if stack else accelerator.software_stack
                note = fit_note(accelerator, stack) if stack and not row["excluded_reason"] else ""
                held = engine.serving_format(serving_format(precision), kv_precision) if engine else None
                kv = kv_precision_name(held) if held else "bf16"
                rows.append({**row, "engine": name, "kv_precision": kv, "fit_note": note})
    return pd.DataFrame(rows)
