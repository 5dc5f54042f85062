"""Every instance type × node count of a catalog, each with its best training plan: one frame.

The rows carry :data:`perdollar.predict.frame.PREDICTION_COLUMNS`, so pricing and selection rank
them unchanged; a language model's sample is the token, so ``samples_per_second`` and its band
are tokens per second. Instances with the same accelerator, GPU count and network share one
search.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TypedDict

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator, InstanceType
from perdollar.predict.fp16_fallback import as_run, bf16_refusal, fp16_fallback_remark
from perdollar.predict.frame import PREDICTION_COLUMNS, SUPPORTED_STACKS
from perdollar.predict.limits import CandidateLimits
from perdollar.predict.llm.fp8 import FP8_PRECISIONS
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.planner import PlanSearch, search_plans
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.predict.llm.step import LLMTrainingPrediction, plan_problem, predict_llm_training
from perdollar.predict.nongpu_llm import training_row, training_stack_problem
from perdollar.workload.llm.workload import LLMWorkload

LLM_COLUMNS = (
    *PREDICTION_COLUMNS,
    "tokens_per_second",
    "sequences_per_second",
    "mfu",
    "plan",
    "plan_text",
    "memory_per_gpu_gib",
    "precision_remark",
    "mfu_remark",
    "band_group",
    "band_rows",
)


def excluded_reason(instance: InstanceType, accelerator: Accelerator | None, workload: LLMWorkload) -> str:
    """Why ``instance`` cannot train ``workload`` at all ('' when it can)."""
    if accelerator is None:
        return "no GPU" if instance.is_cpu_only else "accelerator not in the accelerator table"
    if getattr(instance, "excluded_reason", ""):
        return str(instance.excluded_reason)  # a retired machine, a desktop-only slice: the catalog says why
    if accelerator.software_stack not in SUPPORTED_STACKS:
        return training_stack_problem(accelerator, workload)
    if bf16_refusal(accelerator, workload.precision):  # amp-bf16 falls back to fp16 (fp16_fallback)
        return bf16_refusal(accelerator, workload.precision)
    if workload.precision in FP8_PRECISIONS and not accelerator.peak_fp8_tflops:
        return "no FP8 tensor cores (fp8 training needs an H100, L4, L40S, MI300 or newer)"
    if (instance.accelerator_count or 0) < 1:
        return "a fraction of a GPU cannot train a language model"
    return ""


class ClusterSettings(TypedDict):
    """The keywords :func:`search_plans` and :func:`predict_llm_training` take for the cluster."""

    gpus_per_node: int
    nodes: int
    seq_len: int
    global_batch: int
    precision: str
    network_gbps: float | None
    efa_interfaces: int | None
    efficiency: LLMEfficiency | None
    attention_kernel: str


def cluster_settings(
    workload: LLMWorkload, instance: InstanceType, gpus: int, nodes: int, efficiency: LLMEfficiency | None
) -> ClusterSettings:
    """What every plan of ``workload`` on ``nodes`` × ``instance`` is predicted with, besides the plan."""
    return {
        "gpus_per_node": gpus,
        "nodes": nodes,
        "seq_len": workload.seq_len,
        "global_batch": workload.global_batch,
        "precision": workload.precision,
        "network_gbps": instance.network_gbps,
        "efa_interfaces": instance.efa_interfaces,
        "efficiency": efficiency,
        "attention_kernel": workload.attention_kernel,
    }


def _search(
    workload: LLMWorkload,
    accelerator: Accelerator,
    gpus: int,
    nodes: int,
    instance: InstanceType,
    plan: TrainingPlan | None,
    efficiency: LLMEfficiency | None,
) -> PlanSearch:
    arch = workload.architecture
    common = cluster_settings(workload, instance, gpus, nodes, efficiency)
    if plan is None:
        return search_plans(
            arch,
            accelerator,
            finetune=workload.finetune,
            lora_rank=workload.lora_rank,
            framework=workload.framework,
            optimizer=workload.optimizer,
            micro_batch=workload.micro_batch,
            **common,
        )
    problem = plan_problem(plan, arch, gpus, nodes, workload.global_batch)
    if problem:
        return PlanSearch(None, None, 0, problem)
    prediction = predict_llm_training(arch, accelerator, plan=plan, **common)
    return PlanSearch(prediction if prediction.fits else None, None if prediction.fits else prediction, 1)


def _row(
    instance: InstanceType, nodes: int, prediction: LLMTrainingPrediction | None, excluded: str, problem: str
) -> dict[str, object]:
    row: dict[str, object] = {
        "cloud": instance.cloud,
        "instance_type": instance.name,
        "accelerator_key": instance.accelerator_key,
        "nodes": nodes,
        "accelerators_per_node": float(instance.accelerator_count or 0.0),
        "excluded_reason": excluded,
    }
    if prediction is None:
        nan = math.nan
        row.update(
            samples_per_second=nan,
            samples_per_second_low=nan,
            samples_per_second_high=nan,
            basis="spec",
            bottleneck="",
            step_time_s=nan,
            compute_time_s=nan,
            communication_time_s=nan,
            fits=False,
            fit_reason=problem or excluded,
            max_batch_that_fits=None,
            breakdown_s={},
            tokens_per_second=nan,
            sequences_per_second=nan,
            mfu=nan,
            plan=None,
            plan_text="",
            memory_per_gpu_gib=nan,
        )
        return row
    p = prediction
    communication = sum(v for k, v in p.breakdown_s.items() if "all-" in k or "reduce" in k or "send" in k)
    compute = sum(v for k, v in p.breakdown_s.items() if k in ("compute", "memory-bound kernels"))
    row.update(
        samples_per_second=p.tokens_per_second,
        samples_per_second_low=p.tokens_per_second_low,
        samples_per_second_high=p.tokens_per_second_high,
        basis=p.basis,
        bottleneck=p.bottleneck,
        step_time_s=p.step_time_s,
        compute_time_s=compute,
        communication_time_s=communication,
        fits=p.fits,
        fit_reason=p.fit_reason,
        max_batch_that_fits=p.largest_micro_batch,
        breakdown_s=p.breakdown_s,
        tokens_per_second=p.tokens_per_second,
        sequences_per_second=p.samples_per_second,
        mfu=p.mfu,
        plan=p.plan,
        plan_text=p.plan.text(p.gpus),
        memory_per_gpu_gib=p.memory_per_gpu_gib,
        mfu_remark=p.mfu_remark,
        band_group=p.band_group,
        band_rows=p.band_rows,
    )
    return row


def llm_prediction_frame(
    workload: LLMWorkload,
    catalog: Catalog,
    node_counts: Iterable[int] = (1,),
    *,
    plan: TrainingPlan | None = None,
    efficiency: LLMEfficiency | None = None,
    keep: bool = True,
    limits: CandidateLimits = CandidateLimits(),
) -> pd.DataFrame:
    """One row per (instance type, node count), each with its best plan (or ``plan``); samples are tokens.

    With ``keep``, each cluster's search is read from the data directory when an earlier process
    made it (see :mod:`perdollar.predict.llm.search_store`) and kept there when this one makes it.
    A cluster ``limits`` does not admit (too many chips, another stack) is neither planned nor listed.
    """
    from perdollar.predict.llm.search_store import KeptSearches, kept_searches

    counts = sorted({int(n) for n in node_counts if int(n) >= 1}) or [1]
    accelerators = dict(catalog.accelerators)
    kept = kept_searches(workload, plan, efficiency) if keep else KeptSearches(None)
    searched: dict[tuple[object, ...], PlanSearch] = {}
    rows = []
    for instance in catalog.instance_types.values():
        accelerator = accelerators.get(instance.accelerator_key or "")
        excluded = excluded_reason(instance, accelerator, workload)
        stack = accelerator.software_stack if accelerator is not None else None
        for nodes in counts:
            if not limits.admits(float(instance.accelerator_count or 0), nodes, stack):
                continue
            lone = getattr(instance, "single_node_reason", "") if nodes > 1 else ""
            if excluded or lone or accelerator is None:  # no accelerator: excluded says so
                rows.append(_row(instance, nodes, None, excluded or lone, ""))
                continue
            if accelerator.software_stack not in SUPPORTED_STACKS:  # its own stack, not the GPU planner
                rows.append(training_row(instance, accelerator, workload, nodes, fixed=plan))
                continue
            gpus = int(instance.accelerator_count)
            # One host never uses its network: instances differing only there share a search.
            network = (instance.network_gbps, instance.efa_interfaces) if nodes > 1 else None
            key = (accelerator.key, gpus, nodes, network)
            if key not in searched:
                cluster = (accelerator, gpus, nodes, network)
                found = kept.get(cluster)
                if found is None:
                    chip = as_run(accelerator, workload.precision)  # no bf16: its fp16 rate
                    found = _search(workload, chip, gpus, nodes, instance, plan, efficiency)
                    kept.put(cluster, found)
                searched[key] = found
            found = searched[key]
            chosen = found.best or found.nearest_miss
            problem = ""
            if chosen is None:
                problem = found.problem or "no training plan can run on this cluster"
            row = _row(instance, nodes, chosen, "", problem)
            row["precision_remark"] = fp16_fallback_remark(accelerator, workload.precision)
            rows.append(row)
    kept.save()
    return pd.DataFrame(rows, columns=list(LLM_COLUMNS))
