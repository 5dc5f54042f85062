"""``compare``: a shortlist of configurations, asked and priced exactly as ``recommend`` asks and prices.

The same inputs (stored and given measurements calibrate, a measured figure replaces the
prediction on its own hardware), the same spot assumptions and constraints; then the select
stage's hyperfine-style ratios against the cheapest per sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pandas as pd

from perdollar.ask.inputs import Inputs, Progress, load_inputs, quiet, with_stored_measurements
from perdollar.ask.network import TRAINING_FIXED_COSTS
from perdollar.ask.offers import labelled_offers
from perdollar.ask.questions import decided
from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.catalog.model import InstanceType
from perdollar.configuration import Configuration
from perdollar.errors import PerdollarError
from perdollar.goals import training_goal
from perdollar.measure.result import Measurement
from perdollar.predict import Calibration, predict_frame
from perdollar.predict.measured import apply_measured
from perdollar.price.frame import SpotAssumptions, assumptions_for, describe_assumptions, target_of
from perdollar.price.network_serving import plausibly_priced
from perdollar.price.table import price_table
from perdollar.question import LanguageModelSettings, Question
from perdollar.select import mark_constraints
from perdollar.select.compare import Comparison, compare_priced, configuration_for_comparison
from perdollar.select.model import Recommendation

if TYPE_CHECKING:
    from perdollar.workload.llm import LLMWorkload


@dataclass(frozen=True)
class ComparisonAnswer:
    """The comparison and what it was priced under, for the renderers."""

    comparison: Comparison
    assumptions: SpotAssumptions
    sample_unit: str
    catalog_captured_at: str
    catalog_snapshot_id: str = ""

    def recommendation(self, question: Question) -> Recommendation:
        """The comparison as a stored answer: the best configuration first, then the others as given,
        so that ``history`` lists it, ``history reevaluate`` asks it again and ``report`` draws it."""
        comparison = self.comparison
        order = [comparison.best, *(i for i in range(len(comparison.estimates)) if i != comparison.best)]
        return Recommendation(
            question=question,
            estimates=tuple(comparison.estimates[i] for i in order),
            pareto=(0,),
            explanation=comparison.summary,
            catalog_captured_at=self.catalog_captured_at,
            catalog_snapshot_id=self.catalog_snapshot_id,
            created_at=pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds"),
            notes=(describe_assumptions(self.assumptions),),
            sample_unit=self.sample_unit,
        )


def compare_question(
    question: Question,
    configurations: Sequence[str] = (),
    *,
    catalog: Catalog | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> ComparisonAnswer:
    """``perdollar compare``: load what the question needs once, price the shortlist, compare.

    ``configurations`` default to the question's own (a stored comparison asked again)."""
    configurations = tuple(configurations) or question.configurations
    _check_count(configurations)
    catalog = catalog if catalog is not None else load_catalog()
    question = decided(question)
    if question.family == "language-model":
        # The language-model stack is imported only for its questions: the others start faster.
        from perdollar.ask.llm import checkpoint_bytes, load_language_model

        workload = load_language_model(question)
        assumptions = assumptions_for(question.spot, checkpoint_bytes(workload))
        progress("planning and pricing")
        comparison = compare_language_model(question, configurations, catalog, workload, assumptions)
        return ComparisonAnswer(
            comparison, assumptions, "tokens", str(catalog.captured_at), str(catalog.snapshot_id)
        )
    inputs = load_inputs(question, catalog=catalog, measurements=measurements, progress=progress)
    if use_store:
        inputs = with_stored_measurements(inputs, store_url)
    progress("predicting and pricing")
    profile = inputs.profile
    assumptions = assumptions_for(question.spot, profile.memory.weights + profile.memory.optimizer_state)
    comparison = compare(question, configurations, inputs)
    return ComparisonAnswer(
        comparison, assumptions, profile.sample_unit, str(catalog.captured_at), str(catalog.snapshot_id)
    )


def _check_count(configurations: Sequence[str]) -> None:
    if len(configurations) < 2:
        raise PerdollarError(
            "compare needs at least two configurations",
            'e.g. perdollar compare vit-b16 "4x g5.2xlarge spot" "1x g5.12xlarge on-demand"',
        )


def compare_language_model(
    question: Question,
    configurations: Sequence[str],
    catalog: Catalog,
    workload: LLMWorkload,
    assumptions: SpotAssumptions,
) -> Comparison:
    """Each configuration under the plan its label names (else the user's, else the planner's best)."""
    from perdollar.ask.llm import fixed_costs, fixed_plan
    from perdollar.predict.llm import parse_plan
    from perdollar.predict.llm.frame import llm_prediction_frame

    texts, specs = zip(*(configuration_for_comparison(t, plans=True) for t in configurations), strict=True)
    settings = question.language_model or LanguageModelSettings()
    target = target_of(question)
    stacks = {key: chip.software_stack for key, chip in catalog.accelerators.items()}
    offers = labelled_offers(question, catalog)
    rows = []
    for spec in specs:
        instance = catalog.instance(spec.instance_type, spec.cloud)
        only = replace(catalog, instance_types={(instance.cloud, instance.name): instance})
        plan = parse_plan(spec.plan) if spec.plan else fixed_plan(settings, workload)
        predictions = llm_prediction_frame(workload, only, (spec.nodes,), plan=plan)
        offer = _offer_for(offers, spec, instance)
        priced = price_table(offer, predictions, target, assumptions, fixed_costs(question, workload))
        rows.append(
            mark_constraints(
                priced, target, confidence=training_goal(question.goal).confidence, stacks=stacks
            )
        )
    return compare_priced(pd.concat(rows, ignore_index=True), texts, target, assumptions, unit="tokens")


def compare(question: Question, configurations: Sequence[str], inputs: Inputs) -> Comparison:
    """Side by side: each configuration priced for ``question`` and compared with the best."""
    _check_count(configurations)
    texts, specs = zip(*(configuration_for_comparison(text) for text in configurations), strict=True)
    frame = priced_configurations(question, specs, inputs)
    profile = inputs.profile
    assumptions = assumptions_for(question.spot, profile.memory.weights + profile.memory.optimizer_state)
    return compare_priced(frame, texts, target_of(question), assumptions, unit=profile.sample_unit)


def priced_configurations(question: Question, specs: Sequence[Configuration], inputs: Inputs) -> pd.DataFrame:
    """One priced, constraint-marked row per configuration, in the order given."""
    catalog, profile = inputs.catalog, inputs.profile
    offers = labelled_offers(question, catalog)
    instances = [catalog.instance(spec.instance_type, spec.cloud) for spec in specs]
    usable = [m for m in inputs.measurements if m.ok]
    calibration = Calibration.from_measurements(profile, usable, catalog) if usable else None
    counts = tuple(sorted({spec.nodes for spec in specs}))
    predictions = apply_measured(
        predict_frame(profile, catalog, counts, calibration=calibration), profile, usable
    )
    target = target_of(question)
    assumptions = assumptions_for(question.spot, profile.memory.weights + profile.memory.optimizer_state)
    stacks = {key: chip.software_stack for key, chip in catalog.accelerators.items()}
    rows = []
    for spec, instance in zip(specs, instances, strict=True):
        offer = _offer_for(offers, spec, instance)
        prediction = _prediction_row(predictions, instance, spec.nodes)
        priced = price_table(offer, prediction, target, assumptions, TRAINING_FIXED_COSTS)
        rows.append(
            mark_constraints(
                priced, target, confidence=training_goal(question.goal).confidence, stacks=stacks
            )
        )
    return pd.concat(rows, ignore_index=True)


def _offer_for(offers: pd.DataFrame, spec: Configuration, instance: InstanceType) -> pd.DataFrame:
    cloud, name = instance.cloud, instance.name
    rows = offers.loc[
        (offers["cloud"] == cloud) & (offers["instance_type"] == name) & (offers["market"] == spec.market)
    ]
    rows = rows.loc[rows["price_per_hour"] > 0]
    if spec.region:
        in_region = rows.loc[rows["region"] == spec.region]
        if in_region.empty:
            regions = ", ".join(sorted(rows["region"].unique())[:6]) or "none"
            raise PerdollarError(
                f"{spec.label!r}: no {spec.market} offer of {name} in {spec.region}", f"offered in: {regions}"
            )
        rows = in_region
    if rows.empty:
        raise PerdollarError(
            f"{spec.label!r}: the catalog has no {spec.market} price for {name}",
            "try the other market, or another instance",
        )
    # The cheapest region unless one is named, at a plausible price where there is one: a price
    # flagged implausible is compared only when it is the machine's only one (or named).
    plausible = rows.loc[plausibly_priced(rows)]
    return (plausible if not plausible.empty else rows).sort_values("price_per_hour").head(1)


def _prediction_row(predictions: pd.DataFrame, instance: InstanceType, nodes: int) -> pd.DataFrame:
    rows = predictions.loc[
        (predictions["cloud"] == instance.cloud)
        & (predictions["instance_type"] == instance.name)
        & (predictions["nodes"] == nodes)
    ]
    if rows.empty:
        raise PerdollarError(f"no prediction for {nodes}x {instance.name}", "check the instance name")
    return rows.head(1)
