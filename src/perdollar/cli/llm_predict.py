"""`perdollar predict` for a language model: resolve the plan (fixed or searched) and predict it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from perdollar.errors import PerdollarError


@dataclass(frozen=True, slots=True)
class LLMOptions:
    """The language-model options of the command line (None: not given)."""

    seq_len: int | None = None
    micro_batch: int | None = None
    global_batch: int | None = None
    plan: str | None = None
    activation_checkpointing: bool | None = None
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    finetune: str | None = None
    lora_rank: int | None = None
    cpu_offload: bool | None = None
    attention_kernel: str | None = None
    framework: str | None = None
    virtual_stages: int | None = None
    context_parallel: int | None = None
    expert_parallel: int | None = None

    def given(self) -> list[str]:
        names = {
            "seq_len": "--seq-len",
            "micro_batch": "--micro-batch",
            "global_batch": "--global-batch",
            "plan": "--plan",
            "activation_checkpointing": "--activation-checkpointing",
            "tensor_parallel": "--tensor-parallel",
            "pipeline_parallel": "--pipeline-parallel",
            "finetune": "--finetune",
            "lora_rank": "--lora-rank",
            "cpu_offload": "--cpu-offload",
            "attention_kernel": "--attention-kernel",
            "framework": "--framework",
            "virtual_stages": "--virtual-stages",
            "context_parallel": "--context-parallel",
            "expert_parallel": "--expert-parallel",
        }
        return [flag for field, flag in names.items() if getattr(self, field) not in (None, False)]


def _fixed_plan(options: LLMOptions, workload: Any) -> Any:
    from perdollar.predict.llm import parse_plan

    plan = parse_plan(options.plan or "")
    changes: dict[str, Any] = {"finetune": workload.finetune, "lora_rank": workload.lora_rank}
    if options.micro_batch:
        changes["micro_batch"] = options.micro_batch
    if options.activation_checkpointing:
        changes["activation_checkpointing"] = True
    if options.cpu_offload:
        changes["cpu_offload"] = True
    if options.tensor_parallel:
        changes["tensor_parallel"] = options.tensor_parallel
    if options.pipeline_parallel:
        changes["pipeline_parallel"] = options.pipeline_parallel
    for name in ("virtual_stages", "context_parallel", "expert_parallel"):
        if getattr(options, name):
            changes[name] = getattr(options, name)
    if options.framework:
        changes["framework"] = workload.framework
    if plan.finetune != "full" and not options.finetune:
        changes.pop("finetune")
        changes.pop("lora_rank")
    return replace(plan, **changes)


def predict_llm(
    spec: str,
    instance_name: str,
    cloud: str | None,
    nodes: int,
    precision: str | None,
    options: LLMOptions,
    *,
    store_url: str | None = None,
    read_store: bool = False,
) -> dict[str, Any]:
    """The prediction for ``spec`` on ``nodes`` × ``instance_name``, as the JSON document prints it.

    With ``read_store`` the bench runs of the model stored earlier calibrate it.
    """
    from perdollar import catalog as catalog_mod
    from perdollar.predict.llm import MFU_CONVENTION, predict_llm_training
    from perdollar.predict.llm.frame import excluded_reason
    from perdollar.predict.llm.plan import TrainingPlan
    from perdollar.predict.llm.planner import MAX_TENSOR_PARALLEL, plan_shapes, search_plans
    from perdollar.predict.llm.step import plan_problem
    from perdollar.workload.llm import load_llm_workload

    cat = catalog_mod.load()
    instance = cat.instance(instance_name, cloud=cloud)
    workload = load_llm_workload(
        spec,
        seq_len=options.seq_len,
        micro_batch=options.micro_batch,
        global_batch=options.global_batch,
        precision=precision,
        finetune=options.finetune,
        lora_rank=options.lora_rank,
        attention_kernel=options.attention_kernel,
        framework=options.framework,
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
            "choose another instance or --precision",
        )
    calibration = _calibration(workload, cat, store_url) if read_store else None
    gpus = int(instance.accelerator_count)
    common: dict[str, Any] = {
        "gpus_per_node": gpus,
        "nodes": nodes,
        "seq_len": workload.seq_len,
        "global_batch": workload.global_batch,
        "precision": workload.precision,
        "network_gbps": instance.network_gbps,
        "efa_interfaces": instance.efa_interfaces,
        "efficiency": calibration.efficiency if calibration else None,
        "attention_kernel": workload.attention_kernel,
    }
    arch = workload.architecture
    searched = 0
    if options.plan:
        prediction = predict_llm_training(arch, accelerator, plan=_fixed_plan(options, workload), **common)
    else:
        shapes = [
            s
            for s in plan_shapes(
                arch, gpus, nodes, finetune=workload.finetune, lora_rank=workload.lora_rank,
                framework=workload.framework,
            )
            if (options.tensor_parallel is None or s.tensor_parallel == options.tensor_parallel)
            and (options.virtual_stages is None or s.virtual_stages == options.virtual_stages)
            and (options.pipeline_parallel is None or s.pipeline_parallel == options.pipeline_parallel)
            and (not options.activation_checkpointing or s.activation_checkpointing)
        ]
        shapes = [replace(s, cpu_offload=True) for s in shapes] if options.cpu_offload else shapes
        fixed = {n: getattr(options, n) for n in ("context_parallel", "expert_parallel")
                 if getattr(options, n)}
        shapes = [replace(s, **fixed) for s in shapes] if fixed else shapes
        if not shapes:
            asked = TrainingPlan("ddp", options.tensor_parallel or 1, options.pipeline_parallel or 1)
            why = plan_problem(asked, arch, gpus, nodes, workload.global_batch)
            raise PerdollarError(
                f"no plan has tensor parallel {options.tensor_parallel or 1} and pipeline parallel "
                f"{options.pipeline_parallel or 1} on {nodes} × {gpus} GPUs" + (f": {why}" if why else ""),
                "tensor parallel must divide the GPUs of a host and the model's heads (at most "
                f"{MAX_TENSOR_PARALLEL}), pipeline parallel the hosts (at most one stage a layer)",
            )
        found = search_plans(arch, accelerator, micro_batch=workload.micro_batch, shapes=shapes, **common)
        searched = found.evaluated
        prediction = found.best or found.nearest_miss
        if prediction is None:
            raise PerdollarError(
                f"no training plan can run {workload.name} on {nodes} × {instance.name}: {found.problem}",
                "change --global-batch, --micro-batch or --tensor-parallel/--pipeline-parallel",
            )
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
        "band": {"low": p.tokens_per_second_low, "high": p.tokens_per_second_high, "coverage": 0.8},
        "samples_per_second": p.samples_per_second,
        "step_time_s": p.step_time_s,
        "mfu": p.mfu,
        "mfu_convention": MFU_CONVENTION,
        "plan": p.plan.to_dict(),
        "plan_text": p.plan.text(p.gpus),
        "plan_source": "given" if options.plan else f"searched ({searched} plans priced)",
        "memory_per_gpu_gib": p.memory_per_gpu_gib,
        "memory_gib": p.memory_gib,
        "largest_micro_batch": p.largest_micro_batch,
        "fits": p.fits,
        "fit_reason": p.fit_reason,
        "bottleneck": p.bottleneck,
        "basis": p.basis,
        "calibration": calibration.note if calibration else "",
        "breakdown_s": p.breakdown_s,
    }


def _calibration(workload: Any, catalog: Any, store_url: str | None) -> Any:
    """The calibration from the model's stored bench runs; an unreachable store only costs a note."""
    from perdollar.cli.common import err_console
    from perdollar.cli.persist import stored_measurements
    from perdollar.predict.llm.measured import calibrated
    from perdollar.workload.llm.trainable import measurement_key

    try:
        runs = stored_measurements(measurement_key(workload), store_url=store_url)
    except PerdollarError:
        raise
    except Exception as error:  # an unreachable store only loses calibration, not the prediction
        err_console.print(f"note: stored measurements unavailable ({error})", markup=False)
        runs = []
    return calibrated(workload, runs, catalog)
