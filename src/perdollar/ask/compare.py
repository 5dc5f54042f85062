"""``compare``: a shortlist of configurations, asked and priced exactly as ``recommend`` asks and prices.

The same inputs (stored and given measurements calibrate, a measured figure replaces the
prediction on its own hardware), the same spot assumptions and constraints; then the select
stage's hyperfine-style ratios against the cheapest per sample.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from perdollar.ask.inputs import Inputs
from perdollar.catalog.model import InstanceType
from perdollar.configuration import Configuration
from perdollar.errors import PerdollarError
from perdollar.predict import Calibration, predict_frame
from perdollar.predict.measured import apply_measured
from perdollar.price.frame import assumptions_for, target_of
from perdollar.price.table import price_table
from perdollar.question import Question
from perdollar.select import mark_constraints
from perdollar.select.compare import Comparison, compare_priced, configuration_for_comparison


def compare(question: Question, configurations: Sequence[str], inputs: Inputs) -> Comparison:
    """Side by side: each configuration priced for ``question`` and compared with the best."""
    if len(configurations) < 2:
        raise PerdollarError(
            "compare needs at least two configurations",
            'e.g. perdollar compare vit-b16 "4x g5.2xlarge spot" "1x g5.12xlarge on-demand"',
        )
    texts, specs = zip(*(configuration_for_comparison(text) for text in configurations), strict=True)
    frame = priced_configurations(question, specs, inputs)
    profile = inputs.profile
    assumptions = assumptions_for(question.spot, profile.memory.weights + profile.memory.optimizer_state)
    return compare_priced(frame, texts, target_of(question), assumptions)


def priced_configurations(
    question: Question, specs: Sequence[Configuration], inputs: Inputs
) -> pd.DataFrame:
    """One priced, constraint-marked row per configuration, in the order given."""
    catalog, profile = inputs.catalog, inputs.profile
    offers = catalog.offers_frame()
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
        priced = price_table(offer, prediction, target, assumptions)
        rows.append(mark_constraints(priced, target, confidence=question.confidence, stacks=stacks))
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
    return rows.sort_values("price_per_hour").head(1)  # the cheapest region unless one is named


def _prediction_row(predictions: pd.DataFrame, instance: InstanceType, nodes: int) -> pd.DataFrame:
    rows = predictions.loc[
        (predictions["cloud"] == instance.cloud)
        & (predictions["instance_type"] == instance.name)
        & (predictions["nodes"] == nodes)
    ]
    if rows.empty:
        raise PerdollarError(f"no prediction for {nodes}x {instance.name}", "check the instance name")
    return rows.head(1)
