"""Ask a question, training or serving, and get its recommendation: the one entry point."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perdollar.ask.building import recommend_question
from perdollar.ask.inputs import (
    Progress,
    load_inputs,
    quiet,
    stored_measurements,
    with_stored_measurements,
)
from perdollar.ask.network import answer_training
from perdollar.ask.questions import decided
from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.goals import FleetGoal, Goal, ServingGoal, TrainingGoal
from perdollar.measure.result import Measurement
from perdollar.price.placement import checked_data
from perdollar.question import Question, SpotSettings
from perdollar.select.model import Recommendation
from perdollar.vocabulary import Family, TrainingObjective
from perdollar.workload import Workload, load_workload
from perdollar.workload.llm import load_llm_workload

if TYPE_CHECKING:
    from perdollar.ask.llm_serving import LanguageModelServingAnswer
    from perdollar.ask.network_serving import ServingAnswer


@dataclass(frozen=True)
class Asking:
    """What an answer may use besides its question: loaded once by :func:`answer`."""

    catalog: Catalog
    workload: Workload | None
    measurements: Sequence[Measurement]
    store_url: str | None
    use_store: bool
    progress: Progress


def _network_training(question: Question, asking: Asking) -> Recommendation:
    inputs = load_inputs(
        question, catalog=asking.catalog, workload=asking.workload, measurements=asking.measurements,
        progress=asking.progress,
    )  # fmt: skip
    if asking.use_store:
        inputs = with_stored_measurements(inputs, asking.store_url)
    return answer_training(question, inputs, asking.progress)


def _network_serving(question: Question, asking: Asking) -> Recommendation:
    return ask_serving(
        question, catalog=asking.catalog, workload=asking.workload, measurements=asking.measurements,
        store_url=asking.store_url, use_store=asking.use_store, progress=asking.progress,
    ).recommendation  # fmt: skip


def _language_model_training(question: Question, asking: Asking) -> Recommendation:
    # Imported where it is asked: a vision question need not load the language-model planner.
    from perdollar.ask.llm import answer_language_model

    return answer_language_model(
        question, catalog=asking.catalog, measurements=asking.measurements, store_url=asking.store_url,
        use_store=asking.use_store, progress=asking.progress,
    )  # fmt: skip


def _language_model_serving(question: Question, asking: Asking) -> Recommendation:
    return ask_language_model_serving(
        question, catalog=asking.catalog, measurements=asking.measurements, store_url=asking.store_url,
        use_store=asking.use_store, progress=asking.progress,
    ).recommendation  # fmt: skip


def _fleet(question: Question, asking: Asking) -> Recommendation:
    """A language model's fleet over a day (``recommend --inference --load-curve/--trace``)."""
    from perdollar.ask.fleet import answer_fleet

    return answer_fleet(question, catalog=asking.catalog, progress=asking.progress)


# Each kind of question and how it is answered, by the workload's family and the type of the goal:
# both were decided when the question was built (perdollar.ask.questions.decided), and nothing
# downstream asks again. A fleet over a day is sized alike whatever the family.
ROUTES: dict[tuple[Family, type[Goal]], Callable[[Question, Asking], Recommendation]] = {
    ("network", TrainingGoal): _network_training,
    ("network", ServingGoal): _network_serving,
    ("network", FleetGoal): _fleet,
    ("language-model", TrainingGoal): _language_model_training,
    ("language-model", ServingGoal): _language_model_serving,
    ("language-model", FleetGoal): _fleet,
}


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

    With ``use_store`` the measurements stored for this workload calibrate the answer too. A
    question whose goal is a :class:`~perdollar.goals.FleetGoal` (a load curve or a trace) is
    answered by a fleet over its day, whose figures are the recommendation's ``fleet``.
    """
    asked, question = question, decided(question)
    checked_data(question.data)  # before any work: a size with nowhere to move it from prices nothing
    asking = Asking(
        catalog if catalog is not None else load_catalog(), workload, measurements, store_url, use_store,
        progress,
    )  # fmt: skip
    assert question.family is not None  # decided() always decides
    route = ROUTES[(question.family, type(question.goal))]
    if isinstance(question.goal, FleetGoal):
        return route(asked, asking)  # a fleet is stored with its question as it was asked
    return (_comparison if question.configurations else route)(question, asking)


def _comparison(question: Question, asking: Asking) -> Recommendation:
    """A shortlist of configurations compared (``perdollar compare``), as a stored answer."""
    from perdollar.ask.compare import compare_question

    return compare_question(
        question, catalog=asking.catalog, measurements=asking.measurements, store_url=asking.store_url,
        use_store=asking.use_store, progress=asking.progress,
    ).recommendation(question)  # fmt: skip


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
    question = decided(question)  # stored as asked again: with its family
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
    from perdollar.ask.network_serving import (
        answer_serving,  # a training question does not load the serving stack
    )

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
    question = decided(question)  # stored as asked again: with its family
    found = list(measurements)
    if use_store:
        fingerprint = load_llm_workload(question.workload_name, kind="inference").fingerprint
        found += [m for m in stored_measurements(fingerprint, store_url) if m.mode == "inference"]
    from perdollar.ask.llm_serving import answer_language_model_serving

    return answer_language_model_serving(question, catalog=catalog, progress=progress, measurements=found)


def recommend(
    workload: str | Workload,
    *,
    samples: float | str | None = None,
    epochs: float | None = None,
    dataset_size: float | str | None = None,
    deadline_hours: float | str | None = None,
    budget_usd: float | None = None,
    objective: TrainingObjective = "samples-per-dollar",
    market: str = "any",
    clouds: Sequence[str] = (),
    regions: Sequence[str] = (),
    max_nodes: int = 1,
    max_accelerators: int | None = None,
    stacks: Sequence[str] = (),
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
    question, given = recommend_question(
        workload, samples=samples, epochs=epochs, dataset_size=dataset_size, deadline_hours=deadline_hours,
        budget_usd=budget_usd, objective=objective, market=market, clouds=clouds, regions=regions,
        max_nodes=max_nodes, batch_size=batch_size, precision=precision, weights=weights,
        confidence=confidence, spot=spot, top=top, max_accelerators=max_accelerators, stacks=stacks,
    )  # fmt: skip
    return answer(
        question,
        catalog=catalog,
        workload=given,
        measurements=measurements,
        store_url=store_url,
        use_store=use_store,
        progress=progress,
    )
