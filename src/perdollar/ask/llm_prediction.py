"""A language model's training on one instance: the plan resolved (fixed or searched) and predicted.

What ``perdollar predict LLM --instance`` prints and ``export --format torchrun`` launches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypedDict

from perdollar.ask.questions import PlanFlags
from perdollar.errors import PerdollarError
from perdollar.predict.accelerator_stacks import USABLE_MEMORY_SHARE
from perdollar.predict.frame import SUPPORTED_STACKS
from perdollar.predict.llm.frameworks import framework_choice
from perdollar.question import LanguageModelSettings

if TYPE_CHECKING:
    from perdollar.catalog import Accelerator, Catalog, InstanceType
    from perdollar.predict.llm.measured import LLMTrainingCalibration
    from perdollar.predict.llm.plan import TrainingPlan
    from perdollar.workload.llm.workload import LLMWorkload


class _PlanChanges(TypedDict, total=False):
    """What the flags and the workload change of a plan given with --plan."""

    finetune: str
    lora_rank: int
    micro_batch: int
    activation_checkpointing: bool
    cpu_offload: bool
    tensor_parallel: int
    pipeline_parallel: int
    virtual_stages: int
    context_parallel: int
    expert_parallel: int
    framework: str
    optimizer: str


def _fixed_plan(settings: LanguageModelSettings, flags: PlanFlags, workload: LLMWorkload) -> TrainingPlan:
    from perdollar.predict.llm import parse_plan

    plan = parse_plan(settings.plan or "")
    changes: _PlanChanges = {"finetune": workload.finetune, "lora_rank": workload.lora_rank}
    if settings.micro_batch:
        changes["micro_batch"] = settings.micro_batch
    if flags.activation_checkpointing:
        changes["activation_checkpointing"] = True
    if flags.cpu_offload:
        changes["cpu_offload"] = True
    if flags.tensor_parallel:
        changes["tensor_parallel"] = flags.tensor_parallel
    if flags.pipeline_parallel:
        changes["pipeline_parallel"] = flags.pipeline_parallel
    if flags.virtual_stages:
        changes["virtual_stages"] = flags.virtual_stages
    if flags.context_parallel:
        changes["context_parallel"] = flags.context_parallel
    if flags.expert_parallel:
        changes["expert_parallel"] = flags.expert_parallel
    if workload.framework:
        changes["framework"] = workload.framework
    if workload.optimizer:
        changes["optimizer"] = workload.optimizer
    if plan.finetune != "full" and not settings.finetune:
        changes.pop("finetune")
        changes.pop("lora_rank")
    return replace(plan, **changes)


def predict_llm(
    spec: str,
    instance_name: str,
    cloud: str | None,
    nodes: int,
    precision: str | None,
    settings: LanguageModelSettings,
    flags: PlanFlags,
    *,
    store_url: str | None = None,
    read_store: bool = False,
    note: Callable[[str], None] = lambda message: None,
) -> dict[str, object]:
    """The prediction for ``spec`` on ``nodes`` × ``instance_name``, as the JSON document prints it.

    With ``read_store`` the bench runs of the model stored earlier calibrate it.
    """
    from perdollar import catalog as catalog_mod
    from perdollar.predict.fp16_fallback import as_run, fp16_fallback_remark
    from perdollar.predict.llm import MFU_CONVENTION, predict_llm_training
    from perdollar.predict.llm.frame import cluster_settings, excluded_reason
    from perdollar.predict.llm.plan import TrainingPlan
    from perdollar.predict.llm.planner import MAX_TENSOR_PARALLEL, plan_shapes, search_plans
    from perdollar.predict.llm.step import mfu_formula, plan_problem
    from perdollar.workload.llm import load_llm_workload

    cat = catalog_mod.load()
    instance = cat.instance(instance_name, cloud=cloud)
    workload = load_llm_workload(
        spec,
        seq_len=settings.seq_len,
        micro_batch=settings.micro_batch,
        global_batch=settings.global_batch,
        precision=precision,
        finetune=settings.finetune,
        lora_rank=settings.lora_rank,
        attention_kernel=settings.attention_kernel,
        framework=framework_choice(settings.framework, settings.compile),
        optimizer=settings.optimizer,
    )
    accelerator = cat.accelerators.get(instance.accelerator_key or "")
    if accelerator is None or (instance.accelerator_count or 0) < 1:
        raise PerdollarError(
            f"{instance.name} has no whole GPU perdollar knows",
            "choose a GPU instance (perdollar catalog --gpu)",
        )
    excluded = excluded_reason(instance, accelerator, workload)
    if excluded:
        raise PerdollarError(
            f"{instance.name} cannot train {workload.name} at {workload.precision}: {excluded}",
            "choose another instance, or drop or change the setting the reason names",
        )
    if accelerator.software_stack not in SUPPORTED_STACKS:  # its own stack, as a ranking predicts it
        return _on_own_stack(workload, instance, accelerator, nodes, settings, flags)
    calibration = _calibration(workload, cat, store_url, note) if read_store else None
    precision_remark = fp16_fallback_remark(accelerator, workload.precision)
    accelerator = as_run(accelerator, workload.precision)  # no bf16: amp-bf16 at the fp16 rate
    gpus = int(instance.accelerator_count)
    efficiency = calibration.efficiency if calibration else None
    common = cluster_settings(workload, instance, gpus, nodes, efficiency)
    arch = workload.architecture
    searched = 0
    if settings.plan:
        fixed = _fixed_plan(settings, flags, workload)
        prediction = predict_llm_training(arch, accelerator, plan=fixed, **common)
    else:
        _refuse_parallelism_the_framework_lacks(workload, flags)
        shapes = [
            s
            for s in plan_shapes(
                arch, gpus, nodes, finetune=workload.finetune, lora_rank=workload.lora_rank,
                framework=workload.framework, optimizer=workload.optimizer, seq_len=workload.seq_len,
                global_batch=workload.global_batch,
            )
            if (flags.tensor_parallel is None or s.tensor_parallel == flags.tensor_parallel)
            and (flags.virtual_stages is None or s.virtual_stages == flags.virtual_stages)
            and (flags.pipeline_parallel is None or s.pipeline_parallel == flags.pipeline_parallel)
            and (not flags.activation_checkpointing or s.activation_checkpointing)
            # a context-parallel size asked for is set on every shape below, in place of the searched ones
            and (flags.context_parallel is None or s.context_parallel == 1)
        ]  # fmt: skip
        shapes = [replace(s, cpu_offload=True) for s in shapes] if flags.cpu_offload else shapes
        degrees = {n: getattr(flags, n) for n in ("context_parallel", "expert_parallel") if getattr(flags, n)}
        shapes = [replace(s, **degrees) for s in shapes] if degrees else shapes
        if not shapes:
            asked = TrainingPlan("ddp", flags.tensor_parallel or 1, flags.pipeline_parallel or 1)
            why = plan_problem(asked, arch, gpus, nodes, workload.global_batch)
            raise PerdollarError(
                f"no plan has tensor parallel {flags.tensor_parallel or 1} and pipeline parallel "
                f"{flags.pipeline_parallel or 1} on {nodes} × {gpus} GPUs" + (f": {why}" if why else ""),
                "tensor parallel must divide the GPUs of a host and the model's heads (at most "
                f"{MAX_TENSOR_PARALLEL}), pipeline parallel the hosts (at most one stage a layer)",
            )
        found = search_plans(arch, accelerator, micro_batch=workload.micro_batch, shapes=shapes, **common)
        searched = found.evaluated
        best = found.best or found.nearest_miss
        if best is None:
            raise PerdollarError(
                f"no training plan can run {workload.name} on {nodes} × {instance.name}: {found.problem}",
                "change --global-batch, --micro-batch or --tensor-parallel/--pipeline-parallel",
            )
        prediction = best
    p = prediction
    return {
        "workload": workload.name,
        "fingerprint": workload.fingerprint,
        "cloud": instance.cloud,
        "instance_type": instance.name,
        "accelerator": accelerator.key,
        "nodes": nodes,
        "gpus": p.gpus,
        "seq_len": workload.seq_len,
        "global_batch": p.global_batch,
        "precision": workload.precision,
        "finetune": p.plan.finetune,
        "attention_kernel": workload.attention_kernel,
        "sample_unit": "tokens",
        "tokens_per_second": p.tokens_per_second,
        "tokens_per_second_low": p.tokens_per_second_low,
        "tokens_per_second_high": p.tokens_per_second_high,
        "band": training_band_document(
            p.tokens_per_second_low, p.tokens_per_second_high, p.band_group, p.band_rows
        ),
        "samples_per_second": p.samples_per_second,
        "step_time_s": p.step_time_s,
        "mfu": p.mfu,
        "mfu_convention": MFU_CONVENTION,
        "mfu_formula": mfu_formula(p.plan.finetune),
        "plan": p.plan.to_dict(),
        "framework": p.plan.resolved_framework.name,
        "compiled": p.plan.resolved_framework.compiled,
        "optimizer": p.plan.resolved_optimizer.name,
        "plan_text": p.plan.text(p.gpus),
        "plan_source": "given" if settings.plan else f"searched ({searched} plans priced)",
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "memory_gib": p.memory_gib,
        "largest_micro_batch": p.largest_micro_batch,
        "fits": p.fits,
        "fit_reason": p.fit_reason,
        "precision_remark": precision_remark,
        "mfu_remark": p.mfu_remark,
        "bottleneck": p.bottleneck,
        "basis": p.basis,
        "calibration": calibration.note if calibration else "",
        "breakdown_s": p.breakdown_s,
        "moe": p.moe,  # a mixture of experts' routing, grouped products and exchange (else empty)
        "fp8": p.fp8,  # the FP8 recipe: products in FP8, what stays bf16, quantising's cost (else empty)
    }


def _refuse_parallelism_the_framework_lacks(workload: LLMWorkload, flags: PlanFlags) -> None:
    """A degree asked for beside a searched plan that the framework cannot split the model by is
    refused naming the frameworks that can, before a search that would find no plan and not say why."""
    from perdollar.predict.llm.frameworks import MODEL_PARALLEL, framework_for, parallelism_problem

    degrees = {name: getattr(flags, name) or 1 for name in MODEL_PARALLEL.values()}
    problem = parallelism_problem(framework_for(workload.framework, workload.finetune), degrees)
    if problem:
        raise PerdollarError(problem, "drop that --…-parallel flag, or choose one of those with --framework")


def _on_own_stack(workload: LLMWorkload, instance: InstanceType, accelerator: Accelerator, nodes: int,
                  settings: LanguageModelSettings, flags: PlanFlags) -> dict[str, object]:  # fmt: skip
    """The prediction on a chip that trains under its own stack (Trainium, TPU): the stack's plan,
    with the tensor-parallel degree or fixed plan asked for; what its record cannot run is refused."""
    from perdollar.predict.accelerator_stacks import TRAINING_STACKS
    from perdollar.predict.llm import MFU_CONVENTION
    from perdollar.predict.llm.plan import TrainingPlan
    from perdollar.predict.nongpu_llm import stack_plan_problem, training_row

    stack = TRAINING_STACKS[accelerator.software_stack]
    degrees = ", ".join(map(str, stack.tensor_parallel))
    given = (("--pipeline-parallel", flags.pipeline_parallel), ("--virtual-stages", flags.virtual_stages),
             ("--context-parallel", flags.context_parallel),
             ("--expert-parallel", flags.expert_parallel))  # fmt: skip
    beyond = [flag for flag, value in given if value and value > 1]
    beyond += ["--cpu-offload"] if flags.cpu_offload else []
    if beyond:
        raise PerdollarError(
            f"{stack.label} is modelled with tensor parallel {degrees} only on {accelerator.key}: "
            f"{', '.join(beyond)} cannot apply there",
            f"drop {', '.join(beyond)} (--tensor-parallel takes {degrees}), or choose a GPU instance",
        )
    fixed = _fixed_plan(settings, flags, workload) if settings.plan else None
    problem = stack_plan_problem(stack, fixed) if fixed is not None else ""
    if problem:
        raise PerdollarError(problem, f"fix {stack.strategy}+ac,tpN (N one of {degrees}), or drop --plan")
    row = training_row(
        instance, accelerator, workload, nodes, fixed=fixed, tensor_parallel=flags.tensor_parallel
    )
    plan = row["plan"]
    if not isinstance(plan, TrainingPlan):  # None: no plan of the stack fits
        raise PerdollarError(
            f"{instance.name} cannot train {workload.name} under {stack.label}: "
            f"{row['excluded_reason'] or row['fit_reason']}",
            f"give --tensor-parallel one of {degrees} that fits, change --global-batch, or add nodes",
        )
    chips = int(instance.accelerator_count) * nodes
    low, high = row["samples_per_second_low"], row["samples_per_second_high"]
    return {
        "workload": workload.name, "fingerprint": workload.fingerprint, "cloud": instance.cloud,
        "instance_type": instance.name, "accelerator": accelerator.key, "nodes": nodes, "gpus": chips,
        "seq_len": workload.seq_len, "global_batch": workload.global_batch, "precision": workload.precision,
        "finetune": workload.finetune, "attention_kernel": workload.attention_kernel, "sample_unit": "tokens",
        "tokens_per_second": row["tokens_per_second"], "tokens_per_second_low": low,
        "tokens_per_second_high": high,
        "band": training_band_document(low, high, row["band_group"], row["band_rows"]),
        "samples_per_second": row["sequences_per_second"], "step_time_s": row["step_time_s"],
        "mfu": row["mfu"], "mfu_convention": MFU_CONVENTION,
        "plan": plan.to_dict() | {"framework": stack.name, "compiled": False},
        "framework": stack.name, "compiled": False, "optimizer": "adamw", "plan_text": row["plan_text"],
        "plan_source": "given" if fixed is not None else "the stack's smallest degree that fits",
        "memory_per_gpu_gib": row["memory_per_gpu_gib"],
        "memory_gib": {"capacity": accelerator.memory_gib * USABLE_MEMORY_SHARE},
        "largest_micro_batch": None, "fits": True, "fit_reason": "", "bottleneck": row["bottleneck"],
        "basis": row["basis"], "calibration": "", "breakdown_s": {},
        "stack": row["stack"], "activations_offloaded_to_host": row["activations_offloaded"],
    }  # fmt: skip


def _calibration(
    workload: LLMWorkload, catalog: Catalog, store_url: str | None, note: Callable[[str], None]
) -> LLMTrainingCalibration:
    """The calibration from the model's stored bench runs; an unreachable store only costs a note."""
    from perdollar.ask.inputs import stored_measurements
    from perdollar.predict.llm.measured import calibrated
    from perdollar.workload.llm.trainable import measurement_key

    try:
        runs = stored_measurements(measurement_key(workload), store_url=store_url)
    except PerdollarError:
        raise
    except Exception as error:  # an unreachable store only loses calibration, not the prediction
        note(f"note: stored measurements unavailable ({error})")
        runs = []
    return calibrated(workload, runs, catalog)


def training_band_document(low: object, high: object, group: object, rows: object) -> dict[str, object]:
    """The 80% band of tokens per second, and the held-out group of training runs that set it."""
    from perdollar.predict.held_out_bands import UNVALIDATED

    return {"low": low, "high": high, "coverage": 0.8, "group": group, "rows": rows,
            "validated": bool(group) and group != UNVALIDATED}  # fmt: skip
