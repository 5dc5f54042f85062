"""A training question, answered: offers → predictions → priced candidates → ranked recommendation.

Each stage runs once, left to right: the catalog's allowed offers, the predictor's throughput on
every instance and node count (calibrated from the measurements, a measured figure replacing the
prediction on its own hardware), the price stage's cost and spot columns, and the select stage's
constraints, ranking and explanation.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from perdollar.ask.inputs import Inputs, Progress, quiet
from perdollar.ask.offers import (
    billed_offers,
    in_market,
    left_out_notes,
    question_offers,
    quota_excluded,
    training_bill_notes,
    without_lone_clusters,
)
from perdollar.ask.policy import candidate_limits, check_policy, no_candidate_within_limits
from perdollar.catalog import Catalog
from perdollar.errors import PerdollarError
from perdollar.goals import training_goal
from perdollar.predict import Calibration, predict_frame
from perdollar.predict.frame import node_counts
from perdollar.predict.limits import within_limits
from perdollar.predict.measured import apply_measured
from perdollar.price.bill import describe_bill, priced_with_bill
from perdollar.price.fixed_costs import FixedCosts, describe_fixed_costs
from perdollar.price.frame import assumptions_for, describe_assumptions, target_of
from perdollar.price.placement import data_placement
from perdollar.question import Question
from perdollar.select import (
    DEFAULT_KEEP,
    Recommendation,
    build_recommendation,
    mark_constraints,
    select_candidates,
)

# A network's training reads its data as it goes (the predictor's input pipeline and ingest
# ceilings), from weights it initialises itself: its nodes download only the image.
TRAINING_FIXED_COSTS = FixedCosts()


def check_question(question: Question, catalog: Catalog) -> None:
    """One-line errors for a question no answer can fit, before any work is done."""
    check_policy(question)
    goal = training_goal(question.goal)
    if (goal.deadline_hours or goal.budget_usd) and not goal.target_samples:
        raise PerdollarError(
            "--deadline and --budget need a target", "add --samples N, or --epochs E --dataset-size N"
        )
    known = catalog.clouds
    unknown = [c for c in question.clouds if c.lower() not in known]
    if unknown:
        raise PerdollarError(f"unknown cloud {unknown[0]!r}", f"choose from {', '.join(known)}")


def priced_candidates(
    question: Question, inputs: Inputs, progress: Progress = quiet, offers: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every allowed offer × node count, predicted, priced and marked with its constraints."""
    catalog, profile = inputs.catalog, inputs.profile
    if offers is None:
        offers = question_offers(question, catalog, use="training")
    if offers.empty:
        where = ", ".join(question.regions) or "any region"
        market = "" if question.market == "any" else f"{question.market} "
        raise PerdollarError(
            f"no {market}offer in {', '.join(question.clouds) or 'any cloud'} / {where}",
            "widen --cloud/--region (regions accept patterns like us-*) or use --market any",
            exit_code=3,
        )
    usable = [m for m in inputs.measurements if m.ok]
    calibration = None
    if usable:
        progress(f"calibrating from {len(usable)} measurement(s)")
        calibration = Calibration.from_measurements(profile, usable, catalog)
    counts = node_counts(question.max_nodes)
    progress("predicting throughput on every instance type")
    predictions = apply_measured(
        predict_frame(profile, catalog, counts, calibration=calibration), profile, usable
    )
    predictions = within_limits(predictions, catalog.accelerators, candidate_limits(question))
    if predictions.empty:
        raise no_candidate_within_limits(question)
    progress(f"pricing {len(offers):,} offers × {len(counts)} node counts")
    target = target_of(question)
    priced = priced_with_bill(
        offers, predictions, target, assumptions_for(question.spot, _state_bytes(inputs)),
        placement=data_placement(question.data, catalog, _state_bytes(inputs)),
        tdp_by_key={key: chip.tdp_w for key, chip in catalog.accelerators.items()},
        fixed=TRAINING_FIXED_COSTS,
    )  # fmt: skip
    priced = quota_excluded(priced, question, "nodes")
    stacks = {key: chip.software_stack for key, chip in catalog.accelerators.items()}
    return mark_constraints(priced, target, confidence=training_goal(question.goal).confidence, stacks=stacks)


def answer_training(question: Question, inputs: Inputs, progress: Progress = quiet) -> Recommendation:
    """The ranked recommendation for a training question."""
    check_question(question, inputs.catalog)
    profile = inputs.profile
    question = replace(
        question,
        workload_fingerprint=profile.workload_fingerprint,
        workload_label=inputs.workload.name,
    )
    every_market = billed_offers(question, inputs.catalog, use="training")
    priced = priced_candidates(question, inputs, progress, in_market(every_market, question))
    priced, lone_note = without_lone_clusters(priced, inputs.catalog)
    selection = select_candidates(
        priced,
        question,
        sample_unit=profile.sample_unit,
        keep=max(DEFAULT_KEEP, question.top),
        memory_needed_gib=profile.memory.total / 2**30,
    )
    feasible_count = int((priced["reason"] == "").sum())
    counts = (
        f"{len(priced):,} candidates priced; {feasible_count:,} feasible; "
        f"{len(selection.ranked)} kept (best region per instance, market and node count)"
    )
    assumptions = assumptions_for(question.spot, _state_bytes(inputs))
    return build_recommendation(
        question,
        selection,
        catalog_captured_at=str(inputs.catalog.captured_at),
        catalog_snapshot_id=str(inputs.catalog.snapshot_id),
        notes=(
            describe_assumptions(assumptions),
            describe_bill(data_placement(question.data, inputs.catalog, _state_bytes(inputs))),
            *fixed_costs_note(question, TRAINING_FIXED_COSTS, selection.ranked),
            counts,
            *training_bill_notes(question, every_market, selection.ranked),
            *left_out_notes(every_market, question),
            *lone_note,
        ),
    )


def fixed_costs_note(question: Question, fixed: FixedCosts, ranked: pd.DataFrame) -> tuple[str, ...]:
    """What fixed time the ranked jobs carry; a rate without a target has no job to carry it."""
    if not training_goal(question.goal).target_samples:
        return ()
    hours = ranked["fixed_hours"].to_numpy(dtype=float) if "fixed_hours" in ranked else None
    return (describe_fixed_costs(fixed, hours),)


def _state_bytes(inputs: Inputs) -> float:
    """What a checkpoint writes: the weights and the optimizer state."""
    return inputs.profile.memory.weights + inputs.profile.memory.optimizer_state
