"""A sweep asked as a question: rank the candidates, measure the close ones, recalibrate, re-rank.

``sweep`` plans the candidates the user's own question ranks highest (the same target, deadline,
budget, objective and market as ``recommend``), and after every result asks that question again
with the new measurements. A language model's question is answered as ``recommend`` answers it,
by the planner in tokens, and its bench runs calibrate it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from perdollar.ask.inputs import (
    Inputs,
    Progress,
    load_inputs,
    quiet,
    stored_measurements,
    with_stored_measurements,
)
from perdollar.ask.network import answer_training
from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.configuration import Configuration
from perdollar.errors import PerdollarError
from perdollar.launch.jobs import JobOptions
from perdollar.launch.plan import SweepContext, job_factory, recorder
from perdollar.launch.restrict import restrict_recommendation
from perdollar.launch.spec import BenchmarkJob
from perdollar.launch.sweep import Executor, SweepResult, SweepSettings, run_sweep
from perdollar.measure.result import Measurement
from perdollar.price.model import Estimate
from perdollar.question import Question
from perdollar.select.model import Recommendation
from perdollar.workload import Workload
from perdollar.workload.llm.workload import LLMWorkload


@dataclass(frozen=True, slots=True)
class LanguageModelInputs:
    """What asking a language model's training question again needs (the planner prices it: no
    profile), and the model as bench trains it, for the jobs and their records."""

    catalog: Catalog
    workload: Workload
    model: LLMWorkload
    measurements: tuple[Measurement, ...] = ()


SweepInputs = Inputs | LanguageModelInputs

# A ranking keeps its best few dozen candidates; one restricted by ``--only`` keeps them all, so
# that a named machine is found however far down the full ranking it falls, before and after the
# sweep's measurements move the others past it.
EVERY_CANDIDATE = 1_000_000


def _restricted(
    ask: Callable[[Question], Recommendation],
    question: Question,
    only: Sequence[Configuration],
    *,
    checked: bool,
) -> Recommendation:
    """The question's answer, restricted to ``only`` when it names configurations."""
    if not only:
        return ask(question)
    wide = ask(replace(question, top=max(question.top, EVERY_CANDIDATE)))
    return replace(restrict_recommendation(wide, only, checked=checked), question=question)


def prepare_sweep(
    question: Question,
    *,
    store_url: str | None = None,
    use_store: bool = True,
    progress: Progress = quiet,
    only: Sequence[Configuration] = (),
) -> tuple[SweepInputs, Recommendation]:
    """Load the question's inputs (with its stored measurements) and rank its candidates, only
    those ``only`` names when it names any (``--only``: one that names none is refused)."""
    if question.family == "language-model":
        return _prepare_language_model(
            question, store_url=store_url, use_store=use_store, progress=progress, only=only
        )
    inputs = load_inputs(question, progress=progress)
    if inputs.workload.kind != "train":
        raise PerdollarError(
            f"{question.workload_name!r} is an inference workload",
            "sweep training workloads; for serving use `perdollar recommend --inference`",
        )
    if use_store:
        inputs = with_stored_measurements(inputs, store_url)
    ready = inputs
    return ready, _restricted(
        lambda asked: answer_training(asked, ready, progress), question, only, checked=True
    )


def _prepare_language_model(
    question: Question,
    *,
    store_url: str | None,
    use_store: bool,
    progress: Progress,
    only: Sequence[Configuration],
) -> tuple[LanguageModelInputs, Recommendation]:
    from perdollar.ask.llm import answer_language_model, load_language_model
    from perdollar.workload.llm.trainable import measurement_key, training_workload

    model = load_language_model(question)
    runs = tuple(stored_measurements(measurement_key(model), store_url)) if use_store else ()
    inputs = LanguageModelInputs(load_catalog(), training_workload(model), model, runs)

    def ask(asked: Question) -> Recommendation:
        return answer_language_model(
            asked, catalog=inputs.catalog, workload=model, measurements=runs, progress=progress
        )

    return inputs, _restricted(ask, question, only, checked=True)


def _asked_again(question: Question, inputs: SweepInputs, new: Sequence[Measurement]) -> Recommendation:
    """The question answered again with the sweep's measurements added to those it had."""
    if isinstance(inputs, LanguageModelInputs):
        from perdollar.ask.llm import answer_language_model

        return answer_language_model(
            question, catalog=inputs.catalog, workload=inputs.model, measurements=(*inputs.measurements, *new)
        )
    return answer_training(question, replace(inputs, measurements=(*inputs.measurements, *new)))


def sweep_context(question: Question, inputs: SweepInputs) -> SweepContext:
    return SweepContext(question.workload_name, inputs.workload, inputs.catalog)


def sweep_workload(
    question: Question,
    inputs: SweepInputs,
    recommendation: Recommendation,
    executor: Executor,
    settings: SweepSettings,
    options: JobOptions,
    *,
    store_url: str | None = None,
    store: bool = True,
    on_event: Callable[[str, object], None] | None = None,
    make_job: Callable[[Estimate, int], BenchmarkJob] | None = None,
    only: Sequence[Configuration] = (),
) -> tuple[SweepResult, dict[str, str | None], Recommendation | None]:
    """Run the sweep; returns the result, the stored measurement ids and the new recommendation.

    ``only`` (``--only``) restricts each re-ranked answer as ``prepare_sweep`` restricted
    ``recommendation``, so that the answers before and after the measurements rank the same
    candidates.
    """
    saved: dict[str, str | None] = {}
    latest: dict[str, Recommendation] = {}
    context = sweep_context(question, inputs)

    def rerank(measurements: Sequence[Measurement]) -> Sequence[Estimate]:
        usable = tuple(m for m in measurements if m.ok)
        reranked = _restricted(
            lambda asked: _asked_again(asked, inputs, usable), question, only, checked=False
        )
        latest["recommendation"] = reranked
        return reranked.estimates

    result = run_sweep(
        recommendation.estimates,
        make_job or job_factory(context, options),
        executor,
        settings,
        rerank=rerank,
        on_event=on_event,
        record=recorder(context, store_url=store_url, enabled=store, saved=saved),
    )
    return result, saved, latest.get("recommendation")
