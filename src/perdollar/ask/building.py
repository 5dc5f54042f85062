"""Where every question is built, from the command line's options or the Python API's arguments,
each checked first, so that both refuse the same input with the same one-line error: ``recommend``,
``compare``, ``sweep`` and ``perdollar.recommend``/``compare`` build their ``Question`` here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from perdollar import amounts
from perdollar.ask.arguments import checked_target
from perdollar.ask.offers import check_market
from perdollar.ask.option_checks import (
    check_fleet_traffic,
    check_serving_comparison,
    engine_features,
    request_lengths,
    stacks_given,
    target_samples,
    with_dataset_bytes,
)
from perdollar.ask.options import FleetFlags, Goal, Serving, Shape, Target, Where, node_cap
from perdollar.ask.questions import PlanFlags, family_of, language_model_settings
from perdollar.errors import PerdollarError
from perdollar.goals import FleetGoal, FleetTraffic, ServingGoal, TrainingGoal, request_slo, token_slo
from perdollar.question import BillSettings, DataSettings, LanguageModelSettings, Question, SpotSettings
from perdollar.vocabulary import SERVING_OBJECTIVE, TOKEN_SERVING_OBJECTIVE, Family, TrainingObjective
from perdollar.workload import Workload, canonical_spec

SECONDS_PER_DAY = 86_400.0


def training_question(
    workload: str,
    target: Target,
    goal: Goal,
    where: Where,
    *,
    max_nodes: int,
    batch_size: int | None,
    max_accelerators: int | None = None,
    stacks: tuple[str, ...] = (),
    precision: str | None,
    spot: SpotSettings | None = None,
    data: DataSettings | None = None,
    top: int = 0,
    token_target: float | None = None,
    language_model: LanguageModelSettings | None = None,
    family: Family | None = None,
) -> Question:
    """The training question ``recommend`` and ``sweep`` both ask, from their shared options."""
    from perdollar.amounts import data_size_bytes

    deadline = target.deadline
    counted = target.dataset_size is not None and data_size_bytes(target.dataset_size) is None
    if token_target is not None and (target.epochs is not None or counted):
        given = "--epochs" if target.epochs is not None else f"--dataset-size {target.dataset_size}"
        raise PerdollarError(
            f"{given} would count the target in epochs, and --tokens already sets it",
            "drop --epochs (and a --dataset-size in samples); a size in bytes with --data-region stays",
        )
    return Question(
        workload_name=canonical_spec(workload),
        goal=TrainingGoal(
            objective=goal.objective,
            target_samples=token_target or target_samples(target.samples, target.epochs, target.dataset_size),
            deadline_hours=amounts.duration_hours(deadline, "--deadline") if deadline else None,
            budget_usd=goal.budget,
            weights=goal.weights,
            confidence=goal.confidence,
        ),
        market=where.market,
        clouds=tuple(where.clouds),
        regions=tuple(where.regions),
        max_nodes=max_nodes,
        max_accelerators=max_accelerators,
        stacks=stacks_given(stacks),
        batch_size=batch_size,
        precision=precision,
        spot=spot or SpotSettings(),
        data=with_dataset_bytes(data or DataSettings(), target.dataset_size),
        top=top,
        language_model=language_model,
        family=family,
    )


def asked_training_question(
    workload: str,
    target: Target,
    shape: Shape,
    goal: Goal,
    where: Where,
    language_model: LanguageModelSettings,
    plan_flags: PlanFlags,
    *,
    spot: SpotSettings,
    data: DataSettings,
    bill: BillSettings | None = None,
    top: int = 0,
) -> Question:
    """The training question as ``recommend`` asks it from its options, and ``sweep`` the same: a
    language model's target in tokens and its plan settings, any other workload's in samples."""
    family = family_of(workload)
    token_target, settings = language_model_settings(
        workload, language_model, plan_flags, tokens=target.tokens, samples=target.samples
    )
    question = training_question(
        workload, target, goal, where, max_nodes=node_cap(shape.max_nodes, shape.max_accelerators),
        batch_size=shape.batch_size, max_accelerators=shape.max_accelerators, stacks=shape.stacks,
        precision=shape.precision, spot=spot, data=data, top=top, token_target=token_target,
        language_model=settings, family=family,
    )  # fmt: skip
    return replace(question, bill=bill) if bill is not None else question


def recommend_question(
    workload: str | Workload,
    *,
    samples: float | str | None,
    epochs: float | None,
    dataset_size: float | str | None,
    deadline_hours: float | str | None,
    budget_usd: float | None,
    objective: TrainingObjective,
    market: str,
    clouds: Sequence[str],
    regions: Sequence[str],
    max_nodes: int,
    batch_size: int | None,
    precision: str | None,
    weights: str | None,
    confidence: float,
    spot: SpotSettings | None,
    top: int,
    max_accelerators: int | None = None,
    stacks: Sequence[str] = (),
) -> tuple[Question, Workload | None]:
    """``perdollar.recommend``'s question from its keyword arguments, and the workload it was given
    (with the batch size and precision asked for), if it was given one rather than a name."""
    target = checked_target(
        samples=samples, epochs=epochs, dataset_size=dataset_size, deadline_hours=deadline_hours,
        budget_usd=budget_usd, confidence=confidence,
    )  # fmt: skip
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
        goal=TrainingGoal(
            objective=objective,
            target_samples=target.samples,
            deadline_hours=target.deadline_hours,
            budget_usd=target.budget_usd,
            weights=weights,
            confidence=target.confidence,
        ),
        market=market,
        clouds=tuple(clouds),
        regions=tuple(regions),
        max_nodes=max_nodes,
        max_accelerators=max_accelerators,
        stacks=stacks_given(tuple(stacks)),
        batch_size=batch_size,
        precision=precision,
        spot=spot or SpotSettings(),
        top=top,
    )
    return question, given


def comparison_question(
    workload: str, configurations: Sequence[str], target: Target, language_model: LanguageModelSettings,
    plan_flags: PlanFlags, *, batch_size: int | None, precision: str | None, spot: SpotSettings,
) -> Question:  # fmt: skip
    """``compare``'s training question: the configurations as written, against a target if given."""
    family = family_of(workload)
    token_target, settings = language_model_settings(
        workload, language_model, plan_flags, tokens=target.tokens, samples=target.samples
    )
    samples = token_target or target_samples(target.samples, None, None)
    deadline = target.deadline
    deadline_hours = amounts.duration_hours(deadline, "--deadline") if deadline else None
    if deadline_hours and not samples:
        raise PerdollarError("--deadline needs a target", "add --samples N (--tokens N for a language model)")
    return Question(
        workload_name=canonical_spec(workload),
        goal=TrainingGoal(target_samples=samples, deadline_hours=deadline_hours),
        batch_size=batch_size,
        precision=precision,
        spot=spot,
        family=family,
        language_model=settings,
        configurations=tuple(configurations),
    )


def api_comparison_question(
    workload: str, configurations: Sequence[str], *, samples: float | str | None,
    deadline_hours: float | str | None, budget_usd: float | None, confidence: float,
) -> Question:  # fmt: skip
    """``perdollar.compare``'s question from its arguments, each checked as ``compare`` checks it."""
    amounts.text(workload, "workload", "vit-b16")
    for configuration in configurations:
        amounts.text(configuration, "configuration", "4x g5.2xlarge spot")
    target = checked_target(
        samples=samples, deadline_hours=deadline_hours, budget_usd=budget_usd, confidence=confidence
    )
    return Question(
        workload_name=canonical_spec(workload),
        goal=TrainingGoal(
            target_samples=target.samples, deadline_hours=target.deadline_hours,
            budget_usd=target.budget_usd, confidence=target.confidence,
        ),
    )  # fmt: skip


def serving_question(
    workload: str,
    *,
    qps: float | None,
    p99_ms: float | None,
    p95_ms: float | None,
    max_wait_ms: float | None,
    batch_size: int | None,
    precision: str | None,
    market: str,
    clouds: Sequence[str],
    regions: Sequence[str],
) -> Question:
    """The serving question from ``recommend --inference``'s options, checked."""
    if qps is None:
        raise PerdollarError("--inference needs --qps", "e.g. --inference --qps 200 --p99-ms 50")
    if qps <= 0:
        raise PerdollarError(f"--qps must be positive, got {qps:g}", "give the target rate, e.g. --qps 400")
    if p99_ms is None and p95_ms is None:
        raise PerdollarError("--inference needs a latency SLO", "add --p99-ms 50 (or --p95-ms)")
    if any(v is not None and v <= 0 for v in (p99_ms, p95_ms, max_wait_ms)):
        raise PerdollarError("latency limits must be positive", "e.g. --p99-ms 50 --max-wait-ms 5")
    check_market(market)
    slo = request_slo(p99_ms, p95_ms)
    return Question(
        workload_name=canonical_spec(workload),
        goal=ServingGoal(
            qps=qps,
            objectives=slo,
            objective=SERVING_OBJECTIVE,
            max_wait_ms=max_wait_ms,
            max_batch=batch_size,
        ),
        market=market,
        clouds=tuple(c.lower() for c in clouds),
        regions=tuple(regions),
        batch_size=batch_size,
        precision=precision,
    )


def llm_serving_question(
    workload: str,
    *,
    rps: float | None,
    tokens_per_day: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
    precision: str | None,
    market: str,
    clouds: Sequence[str],
    regions: Sequence[str],
    engine: str | None = None,
    kv_precision: str | None = None,
    features: LanguageModelSettings | None = None,
) -> Question:
    """The question from the options, checked: a rate (requests/s or output tokens a day) and SLOs."""
    check_market(market)
    for flag, value in (("--input-tokens", input_tokens), ("--output-tokens", output_tokens)):
        if value is not None and value < 1:
            raise PerdollarError(f"{flag} must be at least 1, got {value}", f"give e.g. {flag} 500")
    for flag, milliseconds in (("--ttft-p99-ms", ttft_p99_ms), ("--tpot-p99-ms", tpot_p99_ms)):
        if milliseconds is not None and not milliseconds > 0:
            raise PerdollarError(f"{flag} must be positive, got {milliseconds:g}", f"give e.g. {flag} 50")
    from perdollar.predict.llm_serving.engines import checked_engine_options

    checked_engine_options(engine, kv_precision)
    features_given = engine_features(features)
    if (rps is None) == (tokens_per_day is None):
        raise PerdollarError(
            "serving a language model needs one rate: --rps or --tokens-per-day",
            "e.g. --rps 20 --input-tokens 1000 --output-tokens 300",
        )
    out = output_tokens or 300
    rate = (
        rps if rps is not None else amounts.count(tokens_per_day, "--tokens-per-day") / SECONDS_PER_DAY / out
    )
    if not rate > 0:
        raise PerdollarError(f"the request rate must be positive, got {rate:g}", "give e.g. --rps 20")
    return Question(
        workload_name=workload,
        goal=ServingGoal(
            qps=rate, objectives=token_slo(ttft_p99_ms, tpot_p99_ms), objective=TOKEN_SERVING_OBJECTIVE
        ),
        market=market,
        clouds=tuple(c.lower() for c in clouds),
        regions=tuple(regions),
        precision=precision,
        language_model=LanguageModelSettings(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            engine=engine,
            kv_precision=kv_precision,
            **features_given,
        ),
    )


def language_model_serving_question(
    workload: str, serving: Serving, where: Where, language_model: LanguageModelSettings,
    precision: str | None, bill: BillSettings, served: tuple[Goal, DataSettings] | None = None,
) -> tuple[Question, str | None]:  # fmt: skip
    """``recommend LLM --inference``'s question (``served``: its objective, ``--objective carbon``
    or the cost, and where its weights are stored), and what a ``--lengths-file`` says of itself."""
    from perdollar.ask.policy import with_serving_objective

    given = (language_model.input_tokens, language_model.output_tokens)
    lengths = request_lengths(serving.lengths_file, *given)
    question = llm_serving_question(
        workload, rps=serving.rps, tokens_per_day=serving.tokens_per_day,
        input_tokens=lengths.input_tokens if lengths else language_model.input_tokens,
        output_tokens=lengths.output_tokens if lengths else language_model.output_tokens,
        ttft_p99_ms=serving.ttft_p99_ms, tpot_p99_ms=serving.tpot_p99_ms,
        precision=precision, market=where.market, clouds=where.clouds, regions=where.regions,
        engine=language_model.engine, kv_precision=language_model.kv_precision,
        features=language_model,
    )  # fmt: skip
    question = replace(question, bill=bill)
    if served is not None:
        goal, data = served
        question = with_serving_objective(replace(question, data=data), goal.objective)
    return question, lengths.note if lengths else None


def fleet_question(
    workload: str, family: Family, serving: Serving, where: Where, language_model: LanguageModelSettings,
    precision: str | None, fleet: FleetFlags, billed: tuple[BillSettings, Goal],
) -> Question:  # fmt: skip
    """``recommend --inference --load-curve/--trace``'s question: a language model's fleet over the
    day, its traffic kept whole, within its quotas, in its managed service's market, ranked by its
    objective (cost, or carbon)."""
    from perdollar.ask.fleet import read_traffic
    from perdollar.ask.policy import with_serving_objective

    check_fleet_traffic(serving, family)
    curve, kind, text = read_traffic(
        serving.load_curve, serving.trace, language_model.input_tokens, language_model.output_tokens
    )
    mean_rps = sum(i.requests_per_second * i.duration_s for i in curve.intervals) / curve.span_s
    question = llm_serving_question(
        workload, rps=mean_rps, tokens_per_day=None, input_tokens=curve.classes[0].input_tokens,
        output_tokens=curve.classes[0].output_tokens, ttft_p99_ms=serving.ttft_p99_ms,
        tpot_p99_ms=serving.tpot_p99_ms, precision=precision, market=where.market,
        clouds=where.clouds, regions=where.regions, engine=language_model.engine,
        kv_precision=language_model.kv_precision, features=language_model,
    )  # fmt: skip
    traffic = FleetTraffic(kind, curve.source, text, fleet.target_utilisation, fleet.min_replicas,
                           fleet.instance_start_s, fleet.availability)  # fmt: skip
    assert isinstance(question.goal, ServingGoal)  # as llm_serving_question builds it
    bill, goal = billed
    fleet_goal = FleetGoal(question.goal, traffic)
    return with_serving_objective(replace(question, goal=fleet_goal, bill=bill), goal.objective)


def serving_comparison_question(
    workload: str, *, family: Family, serving: Serving, language_model: LanguageModelSettings,
    precision: str | None,
) -> Question:  # fmt: skip
    """``compare LLM --inference``'s question: the rate and SLOs, ``--engine`` kept as written (a
    comma list, or ``any``): the comparison reads its engines from it."""
    from perdollar.ask.llm_serving_compare import compared_engines

    check_serving_comparison(serving, family)
    engines = compared_engines(language_model.engine)  # a mistyped engine is said before any work
    question = llm_serving_question(
        workload, rps=serving.rps, tokens_per_day=serving.tokens_per_day,
        input_tokens=language_model.input_tokens, output_tokens=language_model.output_tokens,
        ttft_p99_ms=serving.ttft_p99_ms, tpot_p99_ms=serving.tpot_p99_ms,
        precision=precision, market="any", clouds=(), regions=(), engine=engines[0],
        kv_precision=language_model.kv_precision, features=language_model,
    )  # fmt: skip
    settings = replace(question.language_model or language_model, engine=language_model.engine)
    return replace(question, language_model=settings)
