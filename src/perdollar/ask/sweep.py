"""A sweep asked as a question: rank the candidates, measure the close ones, recalibrate, re-rank.

``sweep`` plans the candidates the user's own question ranks highest (the same target, deadline,
budget, objective and market as ``recommend``), and after every result asks that question again
with the new measurements.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from perdollar.ask.inputs import Inputs, Progress, load_inputs, quiet, with_stored_measurements
from perdollar.ask.training import answer_training
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


def prepare_sweep(
    question: Question,
    *,
    store_url: str | None = None,
    use_store: bool = True,
    progress: Progress = quiet,
) -> tuple[Inputs, Recommendation]:
    """Load the question's inputs (with its stored measurements) and rank its candidates."""
    inputs = load_inputs(question, progress=progress)
    if inputs.workload.kind != "train":
        raise PerdollarError(
            f"{question.workload_name!r} is an inference workload",
            "sweep training workloads; for serving use `perdollar recommend --inference`",
        )
    if use_store:
        inputs = with_stored_measurements(inputs, store_url)
    return inputs, answer_training(question, inputs, progress)


def sweep_context(question: Question, inputs: Inputs) -> SweepContext:
    return SweepContext(question.workload_name, inputs.workload, inputs.catalog)


def sweep_workload(
    question: Question,
    inputs: Inputs,
    recommendation: Recommendation,
    executor: Executor,
    settings: SweepSettings,
    options: JobOptions,
    *,
    store_url: str | None = None,
    store: bool = True,
    on_event: Callable[[str, Any], None] | None = None,
    make_job: Callable[[Estimate, int], BenchmarkJob] | None = None,
    only: Sequence[Configuration] = (),
) -> tuple[SweepResult, dict[str, str | None], Recommendation | None]:
    """Run the sweep; returns the result, the stored measurement ids and the new recommendation.

    ``only`` (``--only``) restricts each re-ranked answer as it restricted ``recommendation``, so
    that the answers before and after the measurements rank the same candidates.
    """
    saved: dict[str, str | None] = {}
    latest: dict[str, Recommendation] = {}
    context = sweep_context(question, inputs)

    def rerank(measurements: Sequence[Measurement]) -> Sequence[Estimate]:
        usable = tuple(m for m in measurements if m.ok)
        reranked = answer_training(question, replace(inputs, measurements=(*inputs.measurements, *usable)))
        if only:
            reranked = restrict_recommendation(reranked, only, checked=False)
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
