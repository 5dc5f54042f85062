"""A language-model training question, answered: the planner's best plan on every instance and node
count, priced and ranked like any other training question, in tokens.

The planner (:func:`perdollar.predict.llm.frame.llm_prediction_frame`) keeps the fastest feasible
plan of each cluster, which is the best plan for every objective, since a cluster's price does not
depend on its plan; the rest of the walk is the training walk's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pandas as pd

from perdollar.ask.inputs import Progress, quiet, stored_measurements
from perdollar.ask.network import check_question, fixed_costs_note
from perdollar.ask.offers import (
    billed_offers,
    in_market,
    left_out_notes,
    quota_excluded,
    training_bill_notes,
    without_lone_clusters,
)
from perdollar.ask.policy import candidate_limits, no_candidate_within_limits
from perdollar.catalog import Catalog
from perdollar.errors import PerdollarError
from perdollar.goals import training_goal
from perdollar.measure.result import Measurement
from perdollar.predict.accelerator_stacks import TRAINING_STACKS
from perdollar.predict.frame import node_counts
from perdollar.predict.llm import TrainingPlan, parse_plan
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.predict.llm.frameworks import framework_choice, framework_for
from perdollar.predict.llm.measured import calibrated
from perdollar.predict.llm.memory import lora_params
from perdollar.price.bill import describe_bill, priced_with_bill
from perdollar.price.fixed_costs import WEIGHT_BYTES_PER_PARAMETER, FixedCosts
from perdollar.price.frame import assumptions_for, describe_assumptions, target_of
from perdollar.price.placement import data_placement
from perdollar.question import LanguageModelSettings, Question
from perdollar.select import (
    DEFAULT_KEEP,
    Recommendation,
    build_recommendation,
    mark_constraints,
    select_candidates,
)
from perdollar.workload.llm import LLMWorkload, load_llm_workload
from perdollar.workload.llm.trainable import measurement_key

# What a checkpoint of full training writes per parameter: bf16 weights, fp32 master weights and
# Adam's two moments (the ZeRO paper's 2 + 12 bytes).
CHECKPOINT_BYTES_PER_PARAMETER = 14.0


def load_language_model(question: Question) -> LLMWorkload:
    settings = question.language_model or LanguageModelSettings()
    return load_llm_workload(
        question.workload_name,
        seq_len=settings.seq_len,
        micro_batch=settings.micro_batch,
        global_batch=settings.global_batch,
        precision=question.precision,
        finetune=settings.finetune,
        lora_rank=settings.lora_rank,
        attention_kernel=settings.attention_kernel,
        framework=framework_choice(settings.framework, settings.compile),
        optimizer=settings.optimizer,
    )


def fixed_plan(settings: LanguageModelSettings, workload: LLMWorkload) -> TrainingPlan | None:
    """The plan the user fixed, with the workload's fine-tuning mode; None lets the planner search."""
    if not settings.plan:
        return None
    plan = parse_plan(settings.plan)
    if settings.finetune:
        plan = replace(plan, finetune=workload.finetune, lora_rank=workload.lora_rank)
    if workload.micro_batch:
        plan = replace(plan, micro_batch=workload.micro_batch)
    if workload.framework:
        plan = replace(plan, framework=workload.framework)
    if workload.optimizer:
        plan = replace(plan, optimizer=workload.optimizer)
    return plan


def checkpoint_bytes(workload: LLMWorkload) -> float:
    """A checkpoint: the trained state (only the adapters when fine-tuning with LoRA or QLoRA, on the
    matrices the workload's framework adapts)."""
    arch = workload.architecture
    if workload.finetune == "full":
        trained = arch.total_params
    else:
        targets = framework_for(workload.framework, workload.finetune).lora_targets
        trained = lora_params(arch, workload.lora_rank, targets)
    return float(trained) * CHECKPOINT_BYTES_PER_PARAMETER


def fixed_costs(question: Question, workload: LLMWorkload) -> FixedCosts:
    """What each node reads before the first step: a fine-tune's base weights, whole on every node,
    and the dataset, when its size is given, a shard per node."""
    settings = question.language_model or LanguageModelSettings()
    weights = (
        float(workload.architecture.total_params) * WEIGHT_BYTES_PER_PARAMETER if settings.finetune else 0.0
    )
    return FixedCosts(weights_bytes=weights, data_bytes=question.data.dataset_bytes or 0.0)


def answer_language_model(
    question: Question,
    *,
    catalog: Catalog,
    workload: LLMWorkload | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> Recommendation:
    """The ranked recommendation, in tokens, with the plan of every estimate.

    Bench runs of the model (``measurements``, and with ``use_store`` those stored) calibrate it.
    """
    check_question(question, catalog)
    workload = workload if workload is not None else load_language_model(question)
    runs = list(measurements)
    if use_store:
        runs += stored_measurements(measurement_key(workload), store_url)
    calibration = calibrated(workload, runs, catalog)
    question = replace(question, workload_fingerprint=workload.fingerprint)
    every_market = billed_offers(question, catalog, use="training")
    offers = in_market(every_market, question)
    if offers.empty:
        raise PerdollarError(
            "no offer in the allowed clouds, regions and market",
            "widen --cloud/--region (regions accept patterns like us-*) or use --market any",
            exit_code=3,
        )
    counts = node_counts(question.max_nodes)
    plan = fixed_plan(question.language_model or LanguageModelSettings(), workload)
    progress(f"planning {workload.name} on every instance type × {len(counts)} node counts")
    efficiency = calibration.efficiency
    predictions = llm_prediction_frame(
        workload, catalog, counts, plan=plan, efficiency=efficiency, limits=candidate_limits(question)
    )
    if predictions.empty:
        raise no_candidate_within_limits(question)
    progress(f"pricing {len(offers):,} offers")
    target = target_of(question)
    assumptions = assumptions_for(question.spot, checkpoint_bytes(workload))
    # Chips with a modelled stack of their own (Neuron, XLA, Gaudi) carry their own reasons.
    stacks = {key: chip.software_stack for key, chip in catalog.accelerators.items()
              if chip.software_stack not in TRAINING_STACKS}  # fmt: skip
    # The whole bill: the dataset copied from its region, the checkpoints kept, energy and carbon.
    placement = data_placement(question.data, catalog, checkpoint_bytes(workload))
    fixed = fixed_costs(question, workload)
    billed = priced_with_bill(
        offers, predictions, target, assumptions, placement=placement,
        tdp_by_key={key: chip.tdp_w for key, chip in catalog.accelerators.items()}, fixed=fixed,
    )  # fmt: skip
    billed["stack_label"] = billed["accelerator_key"].map(stack_labels(catalog)).fillna("")
    priced, lone_note = without_lone_clusters(
        mark_constraints(
            quota_excluded(billed, question, "nodes"),
            target,
            confidence=training_goal(question.goal).confidence,
            stacks=stacks,
        ),
        catalog,
    )
    selection = select_candidates(
        priced, question, sample_unit="tokens", keep=max(DEFAULT_KEEP, question.top)
    )
    feasible_count = int((priced["reason"] == "").sum())
    counts_note = (
        f"{len(priced):,} candidates priced; {feasible_count:,} feasible; "
        f"{len(selection.ranked)} kept (best region per instance, market and node count)"
    )
    planner_note = (
        f"plans: {plan.token()} fixed" if plan else "plans: the fastest feasible plan per cluster"
    ) + f"; sequence {workload.seq_len} tokens, global batch {workload.global_batch} sequences"
    recommendation = build_recommendation(
        question,
        selection,
        catalog_captured_at=str(catalog.captured_at),
        catalog_snapshot_id=str(catalog.snapshot_id),
        notes=(describe_assumptions(assumptions), describe_bill(placement))
        + fixed_costs_note(question, fixed, selection.ranked)
        + (counts_note, planner_note)
        + stack_note(selection.ranked, question)
        + ((calibration.note,) if calibration.note else ())
        + training_bill_notes(question, every_market, selection.ranked)
        + left_out_notes(every_market, question)
        + lone_note,
    )
    alone = one_gpu_sentence(priced, workload)
    if not alone:
        return recommendation
    return replace(recommendation, explanation=f"{recommendation.explanation}\n{alone}")


def stack_labels(catalog: Catalog) -> dict[str, str]:
    """The training stack of each chip that does not run the PyTorch code as it is (TPU: MaxText)."""
    return {
        key: TRAINING_STACKS[chip.software_stack].label
        for key, chip in catalog.accelerators.items()
        if chip.software_stack in TRAINING_STACKS
    }


def stack_note(ranked: pd.DataFrame, question: Question) -> tuple[str, ...]:
    """What a ranked row on another stack asks of the user: moving the job there, unless kept out."""
    if "stack_label" not in ranked or question.stacks:
        return ()
    labels = sorted({str(label) for label in ranked["stack_label"] if label})
    if not labels:
        return ()
    return (
        f"stacks: rows on {' and '.join(labels)} mean porting the training code to that stack, not "
        "running the PyTorch job as it is; --stack cuda (or rocm) keeps to GPUs",
    )


def one_gpu_sentence(priced: pd.DataFrame, workload: LLMWorkload) -> str:
    """Whether one GPU can hold the training at all, and on which, since that is the first question."""
    single = priced[(priced["nodes"] == 1) & (priced["accelerators_per_node"] == 1)]
    memory = single["accelerator_memory_gib_total"].astype(float)
    too_small = single[(single["reason"] == "fit") & memory.notna()]
    if too_small.empty:
        return ""
    mode = {"full": "full training", "lora": "LoRA fine-tuning", "qlora": "QLoRA fine-tuning"}[
        workload.finetune
    ]
    largest = too_small.loc[too_small["accelerator_memory_gib_total"].astype(float).idxmax()]
    sentence = (
        f"One GPU of {float(largest['accelerator_memory_gib_total']):.0f} GiB or less cannot hold {mode} of "
        f"{workload.name}: {largest['fit_reason']}."
    )
    fitting = single[~single["reason"].isin(["fit", "stack", "no-price"]) & memory.notna()]
    if not fitting.empty:
        smallest = fitting.loc[fitting["accelerator_memory_gib_total"].astype(float).idxmin()]
        return sentence + (
            f" The smallest single GPU it fits is {smallest['accelerator_key']} "
            f"({float(smallest['accelerator_memory_gib_total']):.0f} GiB)."
        )
    hint = " or fine-tune with --finetune lora or qlora" if workload.finetune == "full" else ""
    return sentence + f" Shard it across GPUs (the plans above){hint}."
