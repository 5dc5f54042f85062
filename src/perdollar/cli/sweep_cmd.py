"""``perdollar sweep`` (measure the candidates that can change the answer) and ``perdollar export``."""

from __future__ import annotations

import datetime as dt
import json
import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from perdollar.ask.building import asked_training_question
from perdollar.ask.questions import PlanFlags
from perdollar.cli import common
from perdollar.cli.declared import Group, StoreChoice, takes
from perdollar.cli.output_files import ensure_folder, refuse_links_under
from perdollar.cli.persist import check_store
from perdollar.cli.recommend_options import Shape, Target, Where
from perdollar.cli.shared_options import OUTPUT, Output
from perdollar.cli.sweep_options import JobGoal, NodeSetup, SweepFlags
from perdollar.cli.sweep_render import PlannedJob, outcome_row, print_event, print_plan, print_result
from perdollar.errors import EXIT_FAILURE, PerdollarError
from perdollar.files import write_file_safely
from perdollar.question import DataSettings, LanguageModelSettings, SpotSettings
from perdollar.vocabulary import Word, checked_word

if TYPE_CHECKING:  # types only: importing them would load pandas or the database driver at start-up
    from perdollar.launch.jobs import JobOptions
    from perdollar.launch.plan import SweepContext
    from perdollar.launch.sweep import Executor, Strategy, SweepResult, SweepSettings
    from perdollar.select.model import Recommendation

SWEEP_HELP = (
    "Benchmark the workload on the best candidates for real, store the results, recalibrate and "
    "re-rank.\n\n"
    "Candidates come from the recommendation (`perdollar recommend`): the question takes recommend's "
    "own options (--samples or --tokens, --deadline, --max-nodes, --batch-size, a language model's "
    "--seq-len and --plan, spot and data settings), so it ranks what recommend ranks; recommend's "
    "--budget and --confidence are --job-budget and --deadline-confidence here. "
    "With --strategy voi (the default) "
    "the next candidate measured is the one whose result is most likely to change the top choice per "
    "dollar of benchmark cost (expected improvement over the current best); the sweep stops when the top "
    "choice is stable with --confidence, after --top runs, or when --budget is spent. --strategy top-k "
    "measures the --top best predicted candidates.\n\n"
    "Every job has caps derived from its price: it measures for --duration, is killed after that plus "
    "start-up, and cannot cost more than its cap (provisioning included). A candidate that cannot be "
    "provisioned, times out or crashes is recorded with the reason; the sweep goes on.\n\n"
    "--via skypilot launches through SkyPilot (pip install 'perdollar\\[skypilot]'): on-demand candidates "
    "as clusters torn down after the run, spot candidates as managed jobs with recovery. --via local runs "
    "the same jobs on this machine (results are measurements of THIS host, marked executor: local; "
    "nothing is billed, and they calibrate only candidates with this host's hardware). "
    "--dry-run writes one SkyPilot task YAML per candidate into --out and prints the cost caps. "
    "--only LABEL (repeatable) restricts the sweep to the configurations named, in any form `recommend`, "
    "`compare` or `export` accepts.\n\n"
    "Examples:\n\n"
    "  perdollar sweep vit-b16 --via skypilot --top 3 --dry-run --out sweep-yaml\n"
    "  perdollar sweep vit-b16 --via skypilot --budget 20 --parallel 3\n"
    "  perdollar sweep mlp --via local --top 3 --duration 5\n"
    "  perdollar sweep mlp --via local --only '1x g5.xlarge spot (aws us-east-1)' --only g6.xlarge\n"
    "  sky jobs launch sweep-yaml/perdollar-00-1x-g5-xlarge-spot-aws-us-east-1.yaml\n\n"
    "Exit codes: 0 done (failed candidates are results); 2 bad input; 3 nothing feasible."
)


def _duration_seconds(text: str, option: str) -> float:
    if re.fullmatch(r"\s*[0-9]*\.?[0-9]+\s*", text):
        return float(text)  # a bare number means seconds here
    return common.parse_duration_hours(text, option) * 3600


def _check_choice(value: str, allowed: tuple[Word, ...], option: str) -> Word:
    try:
        return checked_word(value, allowed)
    except ValueError:
        raise PerdollarError(
            f"{option} {value!r} is not one of {', '.join(allowed)}", f"use {option} {allowed[0]}"
        ) from None


def _make_executor(via: str, log_dir: Path) -> Executor:
    if via == "local":
        from perdollar.launch.local import LocalExecutor

        return LocalExecutor(log_dir)
    from perdollar.launch.skypilot import SkyPilotExecutor

    return SkyPilotExecutor(log_dir)


def _default_out(now: dt.datetime) -> Path:
    from perdollar.paths import data_dir

    return data_dir() / "sweeps" / now.strftime("%Y%m%dT%H%M%SZ")


def _dry_run(
    bundle: SweepContext,
    recommendation: Recommendation,
    options: JobOptions,
    settings: SweepSettings,
    out_dir: Path,
    json_output: bool,
) -> int:
    from perdollar.launch.plan import plan_first_jobs, write_dry_run

    def skipped(text: str) -> None:
        common.err_console.print(f"skipped {text}", highlight=False, markup=False)

    chosen = plan_first_jobs(bundle, recommendation, options, settings, on_skip=skipped)
    paths = write_dry_run([job for job, _ in chosen], out_dir)
    rows: list[PlannedJob] = [
        {
            "candidate": job.candidate,
            "why": why,
            "job": job.name,
            "yaml": str(path),
            "duration_s": job.duration_s,
            "max_seconds": job.caps.max_seconds,
            "cost_cap_usd": job.caps.max_dollars,
            "price_per_hour": job.caps.price_per_hour,
            "resources": job.resources,
            "run": job.run,
        }
        for (job, why), path in zip(chosen, paths, strict=True)
    ]
    total = sum(job.caps.max_dollars for job, _ in chosen)
    if json_output:
        common.emit_json(
            {
                "dry_run": True,
                "strategy": settings.strategy,
                "out_dir": str(out_dir),
                "jobs": rows,
                "total_cost_cap_usd": total,
                "catalog_captured_at": recommendation.catalog_captured_at,
            },
            table="jobs",
        )
    else:
        print_plan(rows, total)
    return 0


# The question's options are recommend's own declarations: a sweep measures the candidates of
# the very question `perdollar recommend` answers with the same options.
@takes(
    flags=Group(SweepFlags, panel="Sweep"),
    target=Target,
    shape=Shape,
    job=JobGoal,
    where=Group(Where, panel="Where to look"),
    language_model=Group(LanguageModelSettings, ("training",)),
    plan_flags=Group(PlanFlags, ("training",)),
    spot=SpotSettings,
    data=Group(DataSettings, ("training",)),
    node=Group(NodeSetup, panel="Node setup"),
    store=StoreChoice,
    output=OUTPUT,
)
def sweep(
    workload: str = typer.Argument(
        ..., help="Built-in workload (vit-b16, mlp, llama-3.1-8b, …), a config.json or path/file.py:function."
    ),
    *,
    flags: SweepFlags,
    target: Target,
    shape: Shape,
    job: JobGoal,
    where: Where,
    language_model: LanguageModelSettings,
    plan_flags: PlanFlags,
    spot: SpotSettings,
    data: DataSettings,
    node: NodeSetup,
    store: StoreChoice,
    output: Output,
) -> int:
    json_output = output.json_output
    from perdollar.ask.sweep import prepare_sweep, sweep_context, sweep_workload

    settings = _checked_settings(flags)
    _check_choice(where.market, ("any", "on-demand", "spot"), "--market")
    from perdollar.configuration import parse_configuration

    only_configurations = [parse_configuration(text) for text in flags.only]
    _checked_workdir(node.workdir, node.requirements)  # said before anything is written
    _check_remote_store(node.remote_store, flags.via)
    out_dir = ensure_folder(_fresh_out(flags.out), "--out")
    options = _job_options(workload, node, flags, shape.batch_size, shape.precision, out_dir)
    # Made first: a missing SkyPilot or a wrong store URL is reported before minutes of profiling.
    executor = None if flags.dry_run else _make_executor(flags.via, out_dir / "logs")
    check_store(store.store_url, enabled=store.enabled)
    question = asked_training_question(
        workload, target, shape, job.goal(), where, language_model, plan_flags, spot=spot, data=data
    )
    with common.progress("asking the recommendation", quiet=json_output) as handle:
        inputs, recommendation = prepare_sweep(
            question, store_url=store.store_url, use_store=store.enabled,
            progress=lambda text: handle.update(description=text), only=only_configurations,
        )  # fmt: skip
    if flags.dry_run:
        return _dry_run(
            sweep_context(question, inputs), recommendation, options, settings, out_dir, json_output
        )
    assert executor is not None, "every run but a dry run has its executor"
    result, saved, new_recommendation = sweep_workload(
        question, inputs, recommendation, executor, settings, options, store_url=store.store_url,
        store=store.enabled, on_event=partial(print_event, billed=executor.billed), only=only_configurations,
    )  # fmt: skip
    recommendation_id = None
    if new_recommendation is not None and store.enabled:
        from perdollar.cli.persist import save_recommendation

        recommendation_id = save_recommendation(
            new_recommendation, store_url=store.store_url, enabled=True, catalog=inputs.catalog
        )
    document = _document(workload, result, saved, recommendation_id, out_dir)
    if json_output:
        common.emit_json(document, table="outcomes")
    else:
        print_result(result, saved, out_dir)
    # Every job failed: nothing was measured, which a script calling the sweep must see.
    return EXIT_FAILURE if result.outcomes and not any(o.ok for o in result.outcomes) else 0


def _checked_settings(flags: SweepFlags) -> SweepSettings:
    from perdollar.launch.sweep import SweepSettings

    _check_choice(flags.via, ("skypilot", "local"), "--via")
    strategies: tuple[Strategy, ...] = ("voi", "top-k")
    strategy = _check_choice(flags.strategy, strategies, "--strategy")
    if flags.top is not None and flags.top < 1:
        raise PerdollarError(f"--top {flags.top} measures nothing", "give --top 1 or more")
    if flags.budget is not None and flags.budget <= 0:
        raise PerdollarError(
            f"--budget {flags.budget} is not an amount", "give a positive USD amount, e.g. --budget 20"
        )
    if not 0 < flags.confidence < 1:
        raise PerdollarError(f"--confidence {flags.confidence} is not a probability", "use a value like 0.9")
    if flags.dry_run and flags.via != "skypilot":
        raise PerdollarError("--dry-run writes SkyPilot task YAMLs", "use --via skypilot with --dry-run")
    return SweepSettings(
        strategy=strategy,
        max_runs=flags.top if flags.top is not None else (None if flags.budget is not None else 3),
        budget_usd=flags.budget,
        parallel=flags.parallel,
        confidence=flags.confidence,
    )


def _fresh_out(out: Path | None) -> Path:
    out_dir = out or _default_out(dt.datetime.now(dt.UTC))
    refuse_links_under(out_dir, "--out")
    return out_dir


def _job_options(
    workload: str, node: NodeSetup, flags: SweepFlags, batch_size: int | None, precision: str | None,
    out_dir: Path,
) -> JobOptions:  # fmt: skip
    from perdollar.launch.jobs import JobOptions

    workdir = _checked_workdir(node.workdir, node.requirements)
    remote_workload = workload
    if ".py:" in workload and workdir is None:
        # A user's file travels in the synced working directory; the node names it relative to it.
        file_part, function = workload.rsplit(":", 1)
        workdir = Path(file_part).resolve().parent
        remote_workload = f"{Path(file_part).name}:{function}"
    wheel = _wheel_for_nodes(flags.via, flags.dry_run, node.install, out_dir)
    return JobOptions(
        workload=remote_workload,
        wheel=str(wheel) if wheel else None,
        batch_size=batch_size,
        precision=precision,
        duration_s=_duration_seconds(flags.duration, "--duration"),
        max_dollars_per_run=flags.max_dollars_per_run,
        overhead_seconds=_duration_seconds(flags.overhead, "--overhead-seconds"),
        install=node.install,
        requirements=node.requirements,
        workdir=str(workdir) if workdir else None,
        remote_store_url=node.remote_store,
    )


def _document(
    workload: str,
    result: SweepResult,
    saved: dict[str, str | None],
    recommendation_id: str | None,
    out_dir: Path,
) -> dict[str, object]:
    """The sweep's JSON document, also written to ``sweep.json`` in its folder."""
    document: dict[str, object] = {
        "workload": workload,
        "executor": result.executor,
        "strategy": result.strategy,
        "stopped_because": result.stopped_because,
        "billed": result.billed,
        "spent_cap_usd": result.charged_cap_usd,  # local runs: 0, nothing was charged
        "cloud_cost_cap_usd": result.spent_cap_usd,  # what the same jobs cap at on a cloud
        "p_top_is_best": result.p_top_is_best,
        "outcomes": [dict(outcome_row(o), measurement_id=saved.get(o.job.name)) for o in result.outcomes],
        "choices": result.choices,
        "changes": result.changes,
        "before_top": result.before[0].label if result.before else None,
        "after_top": result.after[0].label if result.after else None,
        "recommendation_id": recommendation_id,
        "out_dir": str(out_dir),
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = json.dumps(common.to_jsonable(document), indent=2)
    write_file_safely(out_dir / "sweep.json", summary, overwrite=True)
    return document


def _checked_workdir(workdir: Path | None, requirements: str | None) -> Path | None:
    """The folder synced to the nodes, as an absolute path, if it is one; else a one-line error."""
    if workdir is None:
        return None
    if not workdir.is_dir():
        problem = "is a file, not a folder" if workdir.exists() else "does not exist"
        raise PerdollarError(f"--workdir {workdir} {problem}", "give the folder that holds your workload")
    if requirements and not (workdir / requirements).is_file():
        raise PerdollarError(
            f"--requirements {requirements} is not a file in --workdir {workdir}",
            "give its path relative to --workdir",
        )
    return workdir.resolve()


def _check_remote_store(url: str | None, via: str) -> None:
    """A URL the nodes can write to: a database server, not a file on this machine."""
    if url is None:
        return
    from perdollar.store.engine import parse_url

    example = "e.g. --remote-store postgresql+psycopg://user@host/db"
    try:
        parsed = parse_url(url)
    except PerdollarError:
        problem = f"--remote-store {url!r} is not a database URL"
        raise PerdollarError(problem, f"give one, {example}") from None
    if via == "skypilot" and parsed.get_backend_name() == "sqlite":
        raise PerdollarError(
            f"--remote-store {parsed.render_as_string(hide_password=True)} is a SQLite file on this "
            "machine, which cloud nodes cannot write to",
            f"give a shared database, {example}",
        )


def _wheel_for_nodes(via: str, dry_run: bool, install: str, out_dir: Path) -> Path | None:
    """A wheel of this checkout for remote nodes (perdollar is not on the package index)."""
    if install or (via == "local" and not dry_run):
        return None  # the user's own requirement, or a local run in this very environment
    from perdollar.launch.wheel import build_wheel, project_root

    root = project_root()
    if root is None:
        raise PerdollarError(
            "perdollar is not running from a source checkout, so there is no wheel to send to the nodes",
            "pass --install REQUIREMENT (e.g. a wheel file or 'perdollar @ git+https://…')",
        )
    common.err_console.print(f"building a wheel of {root} for the nodes", highlight=False, markup=False)
    return build_wheel(root, out_dir / "wheels")


def register(app: typer.Typer) -> None:
    """Add ``sweep`` to ``app``."""
    app.command("sweep", help=SWEEP_HELP)(sweep)
