"""Ask a question, training or serving, and get its recommendation: the one entry point."""

from __future__ import annotations

from collections.abc import Sequence

from perdollar import amounts
from perdollar.ask.arguments import checked_target
from perdollar.ask.inputs import (
    Progress,
    load_inputs,
    quiet,
    stored_measurements,
    with_stored_measurements,
)
from perdollar.ask.language_model import answer_language_model
from perdollar.ask.language_model_serving import LanguageModelServingAnswer, answer_language_model_serving
from perdollar.ask.serving import ServingAnswer, answer_serving
from perdollar.ask.training import answer_training
from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.measure.result import Measurement
from perdollar.question import Question, SpotSettings
from perdollar.select.model import Recommendation
from perdollar.workload import Workload, canonical_spec, load_workload
from perdollar.workload.llm import load_llm_workload, looks_like_llm


def answer(
    question: Question,
    *,
    catalog: Catalog | None = None,
    workload: Workload | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> Recommendation:
    """Answer ``question`` from its fields (the catalog and the workload are loaded unless given).

    With ``use_store`` the measurements stored for this workload calibrate the answer too.
    """
    catalog = catalog if catalog is not None else load_catalog()
    if is_language_model(question):
        if question.kind == "inference":
            return ask_language_model_serving(
                question, catalog=catalog, measurements=measurements, store_url=store_url,
                use_store=use_store, progress=progress,
            ).recommendation  # fmt: skip
        return answer_language_model(
            question,
            catalog=catalog,
            measurements=measurements,
            store_url=store_url,
            use_store=use_store,
            progress=progress,
        )
    if question.kind == "inference":
        return ask_serving(
            question,
            catalog=catalog,
            workload=workload,
            measurements=measurements,
            store_url=store_url,
            use_store=use_store,
            progress=progress,
        ).recommendation
    inputs = load_inputs(
        question, catalog=catalog, workload=workload, measurements=measurements, progress=progress
    )
    if use_store:
        inputs = with_stored_measurements(inputs, store_url)
    return answer_training(question, inputs, progress)


def is_language_model(question: Question) -> bool:
    """A built-in language model or a config.json: planned, and counted in tokens."""
    return question.language_model is not None or looks_like_llm(question.workload_name)


def ask_serving(
    question: Question,
    *,
    catalog: Catalog | None = None,
    workload: Workload | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> ServingAnswer:
    """A serving question with its whole answer (the priced deployment table and the serving mode)."""
    catalog = catalog if catalog is not None else load_catalog()
    if workload is None:
        workload = load_workload(
            question.workload_name,
            batch_size=question.batch_size,
            precision=question.precision,
            kind="inference",
        )
    found = list(measurements)
    if use_store:
        # Latency curves are stored under the workload at batch 1, whatever batches they reached.
        found += stored_measurements(workload.with_overrides(batch_size=1).fingerprint, store_url)
    return answer_serving(question, catalog=catalog, workload=workload, measurements=found, progress=progress)


def ask_language_model_serving(
    question: Question,
    *,
    catalog: Catalog | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> LanguageModelServingAnswer:
    """A language model's serving question with its whole answer (every deployment, ranked).

    With ``use_store`` the model's stored ``serve-bench --url`` runs calibrate it, as they do
    when the question is first asked."""
    catalog = catalog if catalog is not None else load_catalog()
    found = list(measurements)
    if use_store:
        fingerprint = load_llm_workload(question.workload_name, kind="inference").fingerprint
        found += [m for m in stored_measurements(fingerprint, store_url) if m.mode == "inference"]
    return answer_language_model_serving(question, catalog=catalog, progress=progress, measurements=found)


def recommend(
    workload: str | Workload,
    *,
    samples: float | str | None = None,
    epochs: float | None = None,
    dataset_size: float | str | None = None,
    deadline_hours: float | str | None = None,
    budget_usd: float | None = None,
    objective: str = "samples-per-dollar",
    market: str = "any",
    clouds: Sequence[str] = (),
    regions: Sequence[str] = (),
    max_nodes: int = 1,
    batch_size: int | None = None,
    precision: str | None = None,
    weights: str | None = None,
    confidence: float = 0.9,
    spot: SpotSettings | None = None,
    top: int = 0,
    catalog: Catalog | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> Recommendation:
    """The Python form of ``perdollar recommend``: keyword arguments in, a Recommendation out.

    >>> recommend("vit-b16", samples=1e9, deadline_hours=72, max_nodes=4).estimates[0].label
    """
    target = checked_target(
        samples=samples,
        epochs=epochs,
        dataset_size=dataset_size,
        deadline_hours=deadline_hours,
        budget_usd=budget_usd,
        confidence=confidence,
    )
    if not isinstance(workload, Workload):
        amounts.text(workload, "workload", "vit-b16")
    amounts.check_value("max_nodes", max_nodes, integer=True)
    amounts.optional(batch_size, "batch_size", integer=True)
    amounts.check_value("top", top, integer=True)
    given = workload if isinstance(workload, Workload) else None
    name = given.name if given is not None else canonical_spec(str(workload))
    if given is not None and (batch_size is not None or precision is not None):
        given = given.with_overrides(batch_size=batch_size, precision=precision)
    question = Question(
        workload_name=name,
        objective=objective,
        target_samples=target.samples,
        deadline_hours=target.deadline_hours,
        budget_usd=target.budget_usd,
        weights=weights,
        confidence=target.confidence,
        market=market,
        clouds=tuple(clouds),
        regions=tuple(regions),
        max_nodes=max_nodes,
        batch_size=batch_size,
        precision=precision,
        spot=spot or SpotSettings(),
        top=top,
    )
    return answer(
        question,
        catalog=catalog,
        workload=given,
        measurements=measurements,
        store_url=store_url,
        use_store=use_store,
        progress=progress,
    )
