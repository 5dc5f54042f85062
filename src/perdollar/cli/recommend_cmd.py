"""``perdollar recommend`` and ``perdollar compare``: price every candidate and rank by utility."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import typer

from perdollar.ask import answer
from perdollar.ask.building import (
    asked_training_question,
    comparison_question,
    fleet_question,
    language_model_serving_question,
    serving_question,
)
from perdollar.ask.compare import compare_question
from perdollar.ask.inputs import workload_to_measure
from perdollar.ask.option_checks import (
    refuse_serving_options,
    refuse_training_limits,
    refuse_training_targets,
    with_one_rate,
)
from perdollar.ask.options import FleetFlags, Goal, Serving, Shape, Target, Where
from perdollar.ask.questions import PlanFlags, family_of
from perdollar.cli import common, recommend_inputs
from perdollar.cli.declared import LANGUAGE_MODEL_PANELS, Group, StoreChoice, takes
from perdollar.cli.persist import check_store
from perdollar.cli.recommend_options import LocalRun, Shown
from perdollar.cli.recommend_render import show_comparison, show_recommendation
from perdollar.cli.shared_options import MEASURED, OPTIONS, OUTPUT, STEP, Measured, Output, Step
from perdollar.errors import EXIT_OK, PerdollarError
from perdollar.goals import training_goal
from perdollar.question import BillSettings, DataSettings, LanguageModelSettings, NearSettings, SpotSettings
from perdollar.vocabulary import Family

if TYPE_CHECKING:
    from perdollar.select.model import Recommendation

RECOMMEND_HELP = (
    "Which machine should this workload train on? Profile it, predict it on every instance of "
    "every cloud in the catalog (1, 2, 4 … --max-nodes nodes, on-demand and spot), price each "
    "candidate (spot: interruptions, Young/Daly checkpoints, restarts, any node stalls all), and "
    "rank by your objective.\n\n"
    "Objectives: samples-per-dollar (default), time (fastest), cost (cheapest), weighted "
    "(--weights time=1,cost=2). With any objective, --deadline must be met with probability "
    "--confidence and --budget caps the expected cost. Candidates within each other's prediction "
    "bands are marked as ties (≈).\n\n"
    "Examples:\n\n"
    "  perdollar recommend vit-b16 --samples 1e9 --deadline 72h --market any --max-nodes 4\n"
    "  perdollar recommend resnet50 --epochs 90 --dataset-size 1.28M --objective cost --deadline 48h\n"
    "  perdollar recommend bert-base --samples 5e8 --objective time --budget 500 --cloud aws\n"
    "  perdollar recommend vit-b16 --measurements published.csv --json\n"
    "  perdollar recommend llama-3.1-8b --tokens 1e10\n"
    "  perdollar recommend llama-3.1-8b --tokens 1e9 --finetune lora --deadline 7d\n"
    "  perdollar recommend resnet50 --inference --qps 200 --p99-ms 50\n"
    "  perdollar recommend llama-3.1-8b --inference --rps 5 --tpot-p99-ms 50\n\n"
    "Exit codes: 0 ok; 2 bad input; 3 nothing satisfies the constraints (the message says which "
    "one binds and by how much)."
)

COMPARE_HELP = (
    'Compare a shortlist of configurations side by side, hyperfine style: "1.9 ± 0.2 times '
    'cheaper than …" with the reasons (price, throughput and bottleneck, spot losses).\n\n'
    "A configuration is a label as `recommend` prints it (2x g5.12xlarge spot (aws us-east-1)) or "
    "[N x] NAME [spot|on-demand] [@REGION], optionally with a cloud prefix (gcp:a2-highgpu-1g). "
    "Without a market it is on-demand; without a region the cheapest region is used.\n\n"
    "Examples:\n\n"
    '  perdollar compare vit-b16 "4x g5.2xlarge spot" "4x g5.4xlarge spot" "1x g5.12xlarge on-demand"\n'
    '  perdollar compare resnet50 "1x p4d.24xlarge spot @us-east-1" "8x g6e.xlarge spot" --samples 1e9\n'
    '  perdollar compare llama-3.1-8b "1x p5.48xlarge" "2x p4d.24xlarge" --tokens 2e10 --seq-len 4096\n'
    '  perdollar compare llama-3.1-8b --inference --rps 5 "g6e.xlarge" "p5.48xlarge" --engine vllm,sglang\n\n'
    "A language model runs each configuration under the plan its label names, else --plan, else the "
    "planner's best for that machine; --seq-len, --micro-batch, --global-batch, --finetune and "
    "--attention-kernel describe the workload as for recommend.\n\n"
    "With --inference a language model's serving is compared: each machine sized for the rate (the "
    "rate, not the label's count, decides the instances) under each engine of --engine (a comma list, "
    "or any for every engine), side by side."
)


@takes(
    local=Group(LocalRun, panel=OPTIONS),
    target=Target,
    shape=Shape,
    goal=Goal,
    where=Group(Where, panel="Where to look"),
    serving=Group(Serving, scope_panels=LANGUAGE_MODEL_PANELS),
    shown=Group(Shown, panel="Output"),
    output=Group(Output, panel="Output"),
    language_model=Group(LanguageModelSettings, scope_panels=LANGUAGE_MODEL_PANELS),
    plan_flags=Group(PlanFlags, ("training",), panel="Language model: plan"),
    spot=SpotSettings,
    data=Group(DataSettings, ("training",)),
    store=StoreChoice,
    bill=BillSettings,
    fleet=FleetFlags,
    near=Group(NearSettings, panel="Where the users are"),
    measured=MEASURED,
)
def recommend(
    workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
    *,
    local: LocalRun,
    target: Target,
    shape: Shape,
    goal: Goal,
    where: Where,
    serving: Serving,
    shown: Shown,
    output: Output,
    language_model: LanguageModelSettings,
    plan_flags: PlanFlags,
    spot: SpotSettings,
    data: DataSettings,
    store: StoreChoice,
    bill: BillSettings,
    fleet: FleetFlags,
    near: NearSettings,
    measured: Measured,
) -> int:
    measurements = measured.measurements
    batch_size, precision = shape.batch_size, shape.precision
    check_store(store.store_url, enabled=store.enabled)
    if shown.report is not None:  # before the work: a file that may not be replaced is said at once
        from perdollar.report.html import check_report_target

        check_report_target(shown.report)
    if shown.top < 1:
        raise PerdollarError(f"--top must be at least 1, got {shown.top}", "give e.g. --top 10")
    family = family_of(workload)
    serving = with_one_rate(serving, family)
    if serving.inference:
        refuse_training_targets(target, data, family)
        refuse_training_limits(shape)
        if serving.load_curve is not None or serving.trace is not None:
            return _recommend_fleet(
                workload, family, serving, where, language_model, precision, (shown, output), fleet, store,
                billed=(bill, goal), near=near,
            )  # fmt: skip
        return _recommend_serving(
            workload, family, serving, where, language_model, batch_size, precision, (shown, output), store,
                bill,
            served=(goal, data), near=near,
        )  # fmt: skip
    if near.places or near.rtt_ms is not None:  # a training job has no users waiting on its replies
        raise PerdollarError(
            "--near places a serving deployment near its users", "add --inference, or drop --near"
        )
    refuse_serving_options(serving)
    question = asked_training_question(
        workload, target, shape, goal, where, language_model, plan_flags, spot=spot, data=data, bill=bill,
        top=shown.top,
    )  # fmt: skip
    with common.progress("recommend", quiet=output.json_output) as handle:
        found = recommend_inputs.load_measurements(measurements)
        spec = None
        if local.measure:
            spec = workload_to_measure(workload, batch_size=batch_size, precision=precision)
            found += recommend_inputs.measure_here(spec, output.json_output, store.store_url, store.enabled)
        recommendation = answer(
            question, workload=spec, measurements=found, store_url=store.store_url, use_store=store.enabled,
            progress=lambda message: handle.update(description=message),
        )  # fmt: skip
    return _stored_and_shown(recommendation, (shown, output), store)


def _stored_and_shown(
    recommendation: Recommendation, shown_as: tuple[Shown, Output], store: StoreChoice
) -> int:
    shown, output = shown_as
    from perdollar.cli.persist import attempt_store, save_recommendation

    stored, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store.store_url, enabled=store.enabled)
    )
    if shown.report is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, shown.report)
    show_recommendation(
        recommendation, stored_id=stored, report=shown.report, json_output=output.json_output,
        top=shown.top, show_excluded=shown.show_excluded, unit=recommendation.sample_unit,
    )  # fmt: skip
    if store_failure is not None:
        raise store_failure
    return EXIT_OK


def _recommend_serving(
    workload: str, family: Family, serving: Serving, where: Where, language_model: LanguageModelSettings,
    batch_size: int | None, precision: str | None, shown_as: tuple[Shown, Output], store: StoreChoice,
    bill: BillSettings,
    served: tuple[Goal, DataSettings] | None = None, near: NearSettings = NearSettings(),
) -> int:  # fmt: skip
    """``recommend --inference``: a network served per request, a language model per token
    (``served``: its objective, ``--objective carbon`` or the cost, and where its weights are stored)."""
    shown, output = shown_as
    if family == "language-model":
        from perdollar.cli.llm_serving_cmd import recommend_llm_inference

        question, note = language_model_serving_question(
            workload, serving, where, language_model, precision, bill, served
        )
        question = replace(question, near=near)
        return recommend_llm_inference(
            question, lengths_note=note, top=shown.top, json_output=output.json_output,
            store_url=store.store_url, store=store.enabled, report_path=shown.report,
        )  # fmt: skip
    from perdollar.cli.network_serving_cmd import recommend_inference

    question = serving_question(
        workload, qps=serving.qps, p99_ms=serving.p99_ms, p95_ms=serving.p95_ms,
        max_wait_ms=serving.max_wait_ms, batch_size=batch_size, precision=precision, market=where.market,
        clouds=where.clouds, regions=where.regions,
    )  # fmt: skip
    return recommend_inference(
        replace(question, bill=bill, near=near), top=shown.top, json_output=output.json_output,
        store_url=store.store_url, store=store.enabled, report_path=shown.report,
    )  # fmt: skip


def _recommend_fleet(
    workload: str, family: Family, serving: Serving, where: Where, language_model: LanguageModelSettings,
    precision: str | None, shown_as: tuple[Shown, Output], fleet: FleetFlags, store: StoreChoice,
    billed: tuple[BillSettings, Goal], near: NearSettings = NearSettings(),
) -> int:  # fmt: skip
    """``recommend --inference --load-curve/--trace``: a language model's fleet over the day, within
    its quotas, in its managed service's market, ranked by its objective (cost, or carbon)."""
    from perdollar.cli.fleet_cmd import recommend_llm_fleet

    shown, output = shown_as
    question = replace(
        fleet_question(workload, family, serving, where, language_model, precision, fleet, billed), near=near
    )
    return recommend_llm_fleet(
        question, json_output=output.json_output, report_path=shown.report, store_url=store.store_url,
        store=store.enabled,
    )  # fmt: skip


@takes(
    target=Group(Target, ("tokens",)),
    serving=Group(Serving, ("serving-slo",), scope_panels=LANGUAGE_MODEL_PANELS),
    language_model=Group(LanguageModelSettings, ("training", "serving"), scope_panels=LANGUAGE_MODEL_PANELS),
    plan_flags=Group(PlanFlags, ("training",), panel="Language model: plan"),
    spot=SpotSettings,
    store=StoreChoice,
    near=Group(NearSettings, panel="Where the users are"),
    step=STEP,
    output=OUTPUT,
    measured=MEASURED,
)
def compare_command(
    workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
    configs: list[str] = typer.Argument(..., help='Configurations, e.g. "4x g5.2xlarge spot".'),
    *,
    target: Target,
    serving: Serving,
    language_model: LanguageModelSettings,
    plan_flags: PlanFlags,
    spot: SpotSettings,
    store: StoreChoice,
    near: NearSettings,
    step: Step,
    output: Output,
    measured: Measured,
) -> int:
    measurements = measured.measurements
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    check_store(store.store_url, enabled=store.enabled)
    family = family_of(workload)
    serving = with_one_rate(serving, family)
    if serving.inference or serving.rps is not None or serving.tokens_per_day is not None:
        from perdollar.cli.llm_serving_compare_cmd import compare_llm_serving

        return compare_llm_serving(
            workload, configs, family=family, serving=serving, language_model=language_model,
            precision=precision, json_output=json_output, store=store, near=near,
        )  # fmt: skip
    if near.places or near.rtt_ms is not None:
        raise PerdollarError(
            "--near places a serving deployment near its users", "add --inference, or drop --near"
        )
    refuse_serving_options(serving)
    question = comparison_question(
        workload, configs, target, language_model, plan_flags, batch_size=batch_size, precision=precision,
        spot=spot,
    )  # fmt: skip
    goal = training_goal(question.goal)
    with common.progress("compare", quiet=json_output) as handle:
        answer = compare_question(
            question, measurements=recommend_inputs.load_measurements(measurements),
            store_url=store.store_url, use_store=store.enabled,
            progress=lambda message: handle.update(description=message),
        )  # fmt: skip
    from perdollar.cli.persist import attempt_store, save_recommendation

    stored, store_failure = attempt_store(
        lambda: save_recommendation(
            answer.recommendation(question), store_url=store.store_url, enabled=store.enabled
        )
    )
    show_comparison(
        answer.comparison, workload=workload, catalog_captured_at=answer.catalog_captured_at,
        assumptions=answer.assumptions, unit=answer.sample_unit, has_target=goal.has_target,
        deadline_hours=goal.deadline_hours, json_output=json_output, stored_id=stored,
    )  # fmt: skip
    if store_failure is not None:
        raise store_failure
    return EXIT_OK


def register(app: typer.Typer) -> None:
    """Add ``recommend`` and ``compare`` to ``app``."""
    app.command("recommend", help=RECOMMEND_HELP, no_args_is_help=True)(recommend)
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True)(compare_command)
