"""Ask the question: profile → predict → price → rank → Recommendation.

``answer(question)`` re-runs a stored :class:`Question` from its fields alone; ``recommend``
builds the question from keyword arguments. The numeric work is
:func:`~perdollar.select.ranking.select_candidates`, a
pure function of the priced candidate table.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.price.frame import SpotAssumptions, describe_assumptions
from perdollar.price.spot import checkpoint_hours
from perdollar.select import candidates as cand
from perdollar.select.estimates import estimates_from_frame
from perdollar.select.model import Question, Recommendation
from perdollar.select.objectives import OBJECTIVES
from perdollar.select.ranking import DEFAULT_CONFIDENCE, DEFAULT_KEEP, Selection, select_candidates, target_of

Progress = Callable[[str], None]
KNOWN_CLOUDS = ("aws", "gcp", "azure")


def spot_assumptions(question: Question, state_bytes: float) -> SpotAssumptions:
    """Checkpoint, restart and interruption assumptions from the question's options."""
    options = question.options
    seconds = options.get("checkpoint_seconds")
    checkpoint = float(seconds) / 3600.0 if seconds is not None else checkpoint_hours(state_bytes)
    restart = options.get("restart_minutes")
    rate = options.get("interruption_rate")
    base = SpotAssumptions()
    return SpotAssumptions(
        checkpoint_hours=checkpoint,
        restart_hours=float(restart) / 60.0 if restart is not None else base.restart_hours,
        interruption_fraction=float(rate) if rate is not None else None,
    )


def validate_question(question: Question, known_clouds: Sequence[str] = KNOWN_CLOUDS) -> None:
    if question.objective not in OBJECTIVES:
        raise PerdollarError(
            f"unknown objective {question.objective!r}", f"choose one of {', '.join(OBJECTIVES)}"
        )
    if question.market not in cand.MARKETS:
        raise PerdollarError(f"unknown market {question.market!r}", "choose on-demand, spot or any")
    if question.max_nodes < 1:
        raise PerdollarError(f"--max-nodes must be at least 1, got {question.max_nodes}", "give 1, 2, 4, 8 …")
    if (question.deadline_hours or question.budget_usd) and not question.target_samples:
        raise PerdollarError(
            "--deadline and --budget need a target", "add --samples N, or --epochs E --dataset-size N"
        )
    unknown = [c for c in question.clouds if c.lower() not in known_clouds]
    if unknown:
        raise PerdollarError(f"unknown cloud {unknown[0]!r}", f"choose from {', '.join(known_clouds)}")
    confidence = float(question.options.get("confidence", DEFAULT_CONFIDENCE))
    if not 0.0 < confidence < 1.0:
        raise PerdollarError(f"--confidence {confidence} is not a probability", "give a value like 0.9")


def priced_table(
    question: Question,
    *,
    catalog: Any,
    profile: Any,
    measurements: Sequence[Any] = (),
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Predict every (instance, nodes) once, then price every allowed offer × node count."""
    from perdollar.predict import Calibration, predict_frame

    say = progress or (lambda _message: None)
    offers = cand.allowed_offers(
        catalog.offers_frame(), clouds=question.clouds, regions=question.regions, market=question.market
    )
    if offers.empty:
        where = ", ".join(question.regions) or "any region"
        market = "" if question.market == "any" else f"{question.market} "
        raise PerdollarError(
            f"no {market}offer in {', '.join(question.clouds) or 'any cloud'} / {where}",
            "widen --cloud/--region (regions accept patterns like us-*) or use --market any",
            exit_code=3,
        )
    calibration = None
    usable = [m for m in measurements if getattr(m, "ok", False)]
    if usable:
        say(f"calibrating from {len(usable)} measurement(s)")
        calibration = Calibration.from_measurements(profile, usable, catalog)
    say("predicting throughput on every instance type")
    predictions = predict_frame(
        profile, catalog, cand.node_counts(question.max_nodes), calibration=calibration
    )
    predictions = apply_measured(predictions, profile, usable)
    say(f"pricing {len(offers):,} offers × {len(cand.node_counts(question.max_nodes))} node counts")
    state_bytes = profile.memory.weights + profile.memory.optimizer_state
    priced = cand.price_candidates(
        offers,
        predictions,
        target_of(question),
        spot_assumptions(question, state_bytes),
        confidence=float(question.options.get("confidence", DEFAULT_CONFIDENCE)),
        stacks={key: chip.software_stack for key, chip in catalog.accelerators.items()},
    )
    return priced


def apply_measured(predictions: pd.DataFrame, profile: Any, measurements: Sequence[Any]) -> pd.DataFrame:
    """A measurement of this workload on a known instance type replaces the prediction there."""
    if not measurements:
        return predictions
    frame = predictions.copy()
    for measurement in measurements:
        rate = measurement.samples_per_second
        instance = getattr(measurement.host, "instance_type", "unknown")
        same_workload = measurement.workload_fingerprint == profile.workload_fingerprint or (
            measurement.workload_name == profile.workload_name
            and measurement.batch_size == profile.batch_size
            and measurement.precision == profile.precision
        )
        if rate is None or not same_workload or instance in ("", "unknown"):
            continue
        bare = instance.removeprefix("ml.")
        match = (frame["instance_type"] == bare) & (frame["nodes"] == 1)
        if measurement.host.cloud:
            match &= frame["cloud"] == measurement.host.cloud
        if not match.any():
            continue
        frame.loc[match, ["samples_per_second", "samples_per_second_low", "samples_per_second_high"]] = (
            rate.median,
            rate.low,
            rate.high,
        )
        frame.loc[match, "basis"] = "measured"
    return frame


def build_recommendation(
    question: Question,
    selection: Selection,
    *,
    catalog_captured_at: str,
    catalog_snapshot_id: str,
    notes: tuple[str, ...] = (),
) -> Recommendation:
    target = target_of(question)
    feasible = estimates_from_frame(selection.ranked, target)
    excluded = estimates_from_frame(
        selection.excluded, target, reasons=selection.excluded["excluded_text"].tolist()
    )
    created_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    explanation = selection.explanation
    if feasible and feasible[0].captured_at:
        from perdollar.catalog.price_age import age_sentence

        explanation = f"{explanation}\n{age_sentence(feasible[0].captured_at, created_at)}".strip()
    return Recommendation(
        question=question,
        estimates=tuple(feasible) + tuple(excluded),
        pareto=selection.pareto,
        explanation=explanation,
        catalog_captured_at=catalog_captured_at,
        catalog_snapshot_id=catalog_snapshot_id,
        created_at=created_at,
        ties=tuple(int(i) for i in np.flatnonzero(selection.ties)),
        notes=notes,
    )


def _profile_for(question: Question) -> Any:
    from perdollar.profile import profile_workload
    from perdollar.workload import load_workload

    workload = load_workload(
        question.workload_name,
        batch_size=question.options.get("batch_size"),
        precision=question.options.get("precision"),
        kind=question.kind,
    )  # type: ignore[arg-type]
    return profile_workload(workload)


def answer(
    question: Question,
    *,
    catalog: Any = None,
    profile: Any = None,
    measurements: Sequence[Any] = (),
    progress: Progress | None = None,
) -> Recommendation:
    """Answer ``question`` from its fields alone (the catalog and profile are loaded if not given)."""
    if question.kind == "inference":
        # Serving questions are answered by the serving model (cost per million requests).
        from perdollar.select.serving import answer_serving

        return answer_serving(question, catalog=catalog).recommendation
    if catalog is None:
        from perdollar import catalog as catalog_module

        catalog = catalog_module.load()
    validate_question(question, tuple(getattr(catalog, "clouds", KNOWN_CLOUDS)))
    if profile is None:
        if progress:
            progress("profiling the workload")
        profile = _profile_for(question)
    priced = priced_table(
        question, catalog=catalog, profile=profile, measurements=measurements, progress=progress
    )
    memory_gib = profile.memory.total / 2**30
    selection = select_candidates(
        priced,
        question,
        sample_unit=profile.sample_unit,
        keep=max(DEFAULT_KEEP, int(question.options.get("top", 0))),
        memory_needed_gib=memory_gib,
    )
    state_bytes = profile.memory.weights + profile.memory.optimizer_state
    feasible_count = int((priced["reason"] == cand.OK).sum())
    counts = (
        f"{len(priced):,} candidates priced; {feasible_count:,} feasible; "
        f"{len(selection.ranked)} kept (best region per instance, market and node count)"
    )
    notes = (describe_assumptions(spot_assumptions(question, state_bytes)), counts)
    return build_recommendation(
        question,
        selection,
        catalog_captured_at=str(catalog.captured_at),
        catalog_snapshot_id=str(catalog.snapshot_id),
        notes=notes,
    )


def recommend(
    workload: Any,
    *,
    samples: float | None = None,
    epochs: float | None = None,
    dataset_size: float | None = None,
    deadline_hours: float | None = None,
    budget_usd: float | None = None,
    objective: str = "samples-per-dollar",
    market: str = "any",
    clouds: Sequence[str] = (),
    regions: Sequence[str] = (),
    max_nodes: int = 1,
    catalog: Any = None,
    profile: Any = None,
    measurements: Sequence[Any] = (),
    progress: Progress | None = None,
    **options: Any,
) -> Recommendation:
    """Build the :class:`Question` from keyword arguments and answer it.

    ``options`` go into ``Question.options``: weights, confidence, checkpoint_seconds,
    restart_minutes, interruption_rate (monthly fraction), batch_size, precision, top.
    """
    if samples is None and epochs is not None:
        if not dataset_size:
            raise PerdollarError("--epochs needs --dataset-size", "add --dataset-size N (samples per epoch)")
        samples = float(epochs) * float(dataset_size)
    name = workload if isinstance(workload, str) else getattr(workload, "name", str(workload))
    if profile is None:
        from perdollar.profile import profile_workload
        from perdollar.workload import load_workload

        if progress:
            progress("profiling the workload")
        spec = load_workload(
            workload, batch_size=options.get("batch_size"), precision=options.get("precision")
        )
        profile = profile_workload(spec)
    fingerprint = profile.workload_fingerprint
    question = Question(
        workload_name=name,
        workload_fingerprint=fingerprint,
        kind=getattr(profile, "kind", "train") or "train",
        objective=objective,
        target_samples=samples,
        deadline_hours=deadline_hours,
        budget_usd=budget_usd,
        market=market,
        clouds=tuple(clouds),
        regions=tuple(regions),
        max_nodes=max_nodes,
        options={k: v for k, v in options.items() if v is not None},
    )
    return answer(question, catalog=catalog, profile=profile, measurements=measurements, progress=progress)
