"""`perdollar history`, `history reevaluate`, `report` and `check`: results that last."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from perdollar.cli.common import console, emit_json, err_console, print_table, progress
from perdollar.cli.declared import Group, StoreChoice, takes
from perdollar.cli.shared_options import OPTIONS, OUTPUT, STEP, STORE_URL_ONLY, Output, Step
from perdollar.cli.store_options import CheckRun, HistoryFilter, Reevaluation, ReportTarget
from perdollar.errors import EXIT_FAILURE, PerdollarError
from perdollar.question import Question

if TYPE_CHECKING:
    from perdollar.ask.checklist import CheckRun as ChecklistRun
    from perdollar.measure.result import Measurement

STORE_HELP = "Results store: any SQLAlchemy URL (default: PERDOLLAR_STORE, else SQLite in the data dir)."
STATUS_STYLE = {"pass": "green", "warn": "yellow", "fail": "red", "unknown": "dim"}

history_app = typer.Typer(
    help="""List stored measurements and recommendations, newest first.

    perdollar history
    perdollar history --workload vit-b16 --json
    perdollar history --check               (list stored rows that cannot be read back)
    perdollar history reevaluate            (the newest recommendation, against today's catalog)
    """,
    invoke_without_command=True,
    no_args_is_help=False,
    rich_markup_mode="markdown",
)


@history_app.callback()
@takes(shown=Group(HistoryFilter, panel=OPTIONS), output=OUTPUT, store=STORE_URL_ONLY)
def history(ctx: typer.Context, *, shown: HistoryFilter, output: Output, store: StoreChoice) -> None:
    workload, kind, limit, check = shown.workload, shown.kind, shown.limit, shown.check
    json_output = output.json_output
    store_url = store.store_url
    if ctx.invoked_subcommand:
        return
    if check:
        from perdollar.cli.stored_rows import check_rows

        check_rows(store_url, json_output)
        return
    from perdollar.paths import default_store_url
    from perdollar.store import open_store
    from perdollar.store.store import StoreMissingError

    try:
        with open_store(store_url, create=False) as opened:
            entries = opened.list_history(workload=workload, kind=kind, limit=limit)
            where = opened.display_url
    except StoreMissingError:
        if store_url:  # a path the user typed: say it is not there rather than make it
            raise
        entries, where = [], default_store_url()
    if json_output:
        emit_json({"store": where, "entries": entries}, table="entries")
        return
    if not entries:
        console.print(
            f"Nothing stored yet in {where}. `perdollar bench` and `perdollar recommend` store "
            "their results here.",
            highlight=False,
        )
        return
    from perdollar.terminal_tables import FittingTable

    table = FittingTable(title=f"Stored results ({escape(where)})", title_justify="left")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for column, drop_order in (("when (UTC)", 2), ("kind", 3), ("id", 0), ("workload", 1), ("result", 0)):
        table.add_column(column, no_wrap=column == "id", drop_order=drop_order)
    for entry in entries:
        table.add_row(
            escape(entry.at[:19].replace("T", " ")),
            entry.kind,
            escape(entry.id),
            escape(entry.workload_name),
            escape(entry.summary),
        )
    print_table(table)


@history_app.command("reevaluate")
@takes(asked=Group(Reevaluation, panel=OPTIONS), output=OUTPUT, store=STORE_URL_ONLY)
def reevaluate(
    recommendation_id: str | None = typer.Argument(
        None, help="Stored recommendation id (default: the newest)."
    ),
    *,
    asked: Reevaluation,
    output: Output,
    store: StoreChoice,
) -> None:
    """Ask a stored question again with today's catalog and measurements.

    Says whether the top choice flipped and why: price moves since the stored catalog snapshot,
    new measurements of the workload, candidates newly excluded or added.

    perdollar history reevaluate
    perdollar history reevaluate 3f9a2c --json
    """
    json_output = output.json_output
    store_url = store.store_url
    store_new, run_workload_file = asked.store_new, asked.run_workload_file
    from perdollar.ask import answer
    from perdollar.cli.persist import save_recommendation
    from perdollar.cli.stored_rows import read_back
    from perdollar.goals import FleetGoal
    from perdollar.report.changes import compare
    from perdollar.store import open_store
    from perdollar.store.snapshots import price_index

    with open_store(store_url, create=store_url is None) as opened:  # never a new file at a typo
        stored = read_back(opened.get_stored_recommendation(recommendation_id))
        old = stored.recommendation
        if isinstance(
            old.question.goal, FleetGoal
        ):  # a fleet over a day: asked again from its stored traffic
            from perdollar.cli.fleet_history import reevaluate_fleet

            return reevaluate_fleet(stored, store_url=store_url, store_new=store_new, json_output=json_output)
        snapshot = opened.catalog_snapshot(old.catalog_snapshot_id)
        measurements = opened.measurements_for(old.question.workload_fingerprint)
    _check_workload_file(stored.id, old.question, allowed=run_workload_file)
    with progress(f"re-asking {old.question.workload_name} against today's catalog", quiet=json_output):
        new = answer(old.question, measurements=measurements)  # today's catalog, loaded once and kept
    _check_same_workload(old.question, new.question)
    result = compare(old, new, price_index(snapshot.offers) if snapshot else None)
    new_id = save_recommendation(new, store_url=store_url, enabled=store_new)
    if json_output:
        emit_json({"stored_id": stored.id, "new_id": new_id, **dataclasses.asdict(result)})
        return
    console.print(
        f"Recommendation {stored.id} ({escape(old.question.workload_name)}, "
        f"catalog {result.old_captured_at[:10]}) "
        f"asked again with the catalog of {result.new_captured_at[:10]}:",
        highlight=False,
    )
    console.print(f"[bold]{escape(result.summary)}[/]", highlight=False)
    for reason in result.reasons:
        console.print(f"  • {escape(reason)}", highlight=False)
    if result.price_moves:
        console.print("Largest price moves among the candidates:", highlight=False)
        for move in result.price_moves:
            console.print(f"  • {move}", highlight=False)
    if new_id:
        console.print(
            f"Stored today's answer as {new_id} (`perdollar report {new_id} -o report.html`).",
            highlight=False,
        )


def _check_workload_file(stored_id: str, question: Question, *, allowed: bool) -> None:
    """A stored question names its workload; one that names a file would run that file's code,
    and the name is only as trustworthy as everyone who can write the store."""
    from perdollar.workload.loader import names_workload_file

    if names_workload_file(question.workload_name) and not allowed:
        raise PerdollarError(
            f"recommendation {stored_id} is about the workload file {question.workload_name}; asking it "
            "again runs that file's code",
            "check the file, then pass --run-workload-file (or ask afresh with perdollar recommend)",
        )


def _check_same_workload(old: Question, new: Question) -> None:
    """The file must still build the workload the question was stored for: otherwise today's
    answer would be about another workload under the old question's name."""
    if old.workload_fingerprint and new.workload_fingerprint != old.workload_fingerprint:
        raise PerdollarError(
            f"{old.workload_name} now builds another workload (fingerprint {new.workload_fingerprint}, "
            f"stored {old.workload_fingerprint}); nothing was stored",
            "ask afresh: perdollar recommend FILE:FUNCTION",
        )


@takes(target=Group(ReportTarget, panel=OPTIONS), printed=OUTPUT, store=STORE_URL_ONLY)
def report(
    recommendation_id: str | None = typer.Argument(
        None, help="Stored recommendation id (default: the newest)."
    ),
    *,
    target: ReportTarget,
    printed: Output,
    store: StoreChoice,
) -> None:
    """Write a stored recommendation as one self-contained HTML report (works offline).

    A training answer's page holds the question and assumptions, the ranked table, an interactive
    time-vs-cost scatter with the Pareto front and prediction bands, samples per dollar per
    accelerator, the spot view (expected cost, P(deadline)), the explanation and the performance
    checklist. A language model's serving answer shows $ per million tokens, TTFT and TPOT against
    the SLO, the fronts of cost vs latency, engines and formats compared, carbon and where each
    price comes from; a fleet over the day, its replicas and cost hour by hour against the static peak.

    perdollar report --last -o report.html
    perdollar report 3f9a2c -o vit.html

    A file already at --output, an earlier report included, is left as it is unless --force
    (then the command says it replaced it). Missing folders in the path are created.
    """
    json_output = printed.json_output
    store_url = store.store_url
    last, output, workload, force = target.last, target.output, target.workload, target.force
    from perdollar.cli.stored_rows import read_back
    from perdollar.errors import PerdollarError
    from perdollar.report.html import check_report_target, report_kind, write_report
    from perdollar.report.stored_checklist import checklist_for
    from perdollar.store import open_store

    if last and recommendation_id:
        raise PerdollarError("give a recommendation id or --last, not both", "drop one of them")
    check_report_target(output, force=force)
    replacing = output.exists()
    if replacing and not force:  # before the work: a report written earlier may be one the user keeps
        raise PerdollarError(
            f"--output {output} already exists (a report written earlier); it was left as it is",
            "give a new path with -o, or replace it on purpose with --force",
        )
    with open_store(store_url, create=store_url is None) as opened:  # never a new file at a typo
        stored = read_back(opened.get_stored_recommendation(recommendation_id, workload=workload))
        # The performance checklist judges a training workload; a serving or fleet report has none.
        training = report_kind(stored.recommendation) == "training"
        fingerprint = stored.recommendation.question.workload_fingerprint
        measurements = opened.measurements_for(fingerprint) if training else []
    checklist = checklist_for(stored.recommendation, measurements) if training else None
    path = write_report(stored.recommendation, output, checklist=checklist, force=force)
    if json_output:
        emit_json({"id": stored.id, "path": str(path.resolve())})
    else:
        console.print(
            f"{'Replaced' if replacing else 'Wrote'} {escape(str(path))} (recommendation {stored.id}, "
            f"{escape(stored.recommendation.question.workload_name)}).",
            highlight=False,
        )


@takes(run=Group(CheckRun, panel=OPTIONS), store=StoreChoice, step=STEP, output=OUTPUT)
def check(
    workload: str = typer.Argument(..., help="Built-in workload (mlp, vit-b16, …) or path/file.py:function."),
    *,
    run: CheckRun,
    store: StoreChoice,
    step: Step,
    output: Output,
) -> None:
    """Measure a workload and run the performance checklist on it.

    Benchmarks it with cached input, the full input pipeline, the input pipeline alone and
    several processes, then checks input-boundness, utilisation (< 80%), memory headroom, mixed
    precision, CPU-to-accelerator ratio, scaling and ingest bandwidth: each pass / warn / fail /
    unknown with its measured evidence and the fix.

    perdollar check mlp
    perdollar check vit-b16 --instance g5.xlarge --duration 5
    """
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    duration, nproc, instance, device = run.duration, run.nproc, run.instance, run.device
    from perdollar.ask.checklist import run_checks
    from perdollar.cli.persist import check_store, save_measurement

    check_store(store.store_url, enabled=store.enabled)
    with progress(f"checking {workload}", total=5 if nproc > 1 else 4, quiet=json_output) as bar:

        def advance(text: str) -> None:
            bar.update(description=text)
            bar.advance()

        result = run_checks(
            workload,
            duration_s=duration,
            batch_size=batch_size,
            precision=precision,
            nproc=nproc,
            instance=instance,
            device=device,
            on_step=advance,
        )
    ids = [
        save_measurement(m, store_url=store.store_url, enabled=store.enabled, source="check")
        for m in result.measurements
    ]
    if json_output:
        emit_json(
            {
                "workload": result.workload_name,
                "fingerprint": result.workload_fingerprint,
                "target": result.target,
                "items": result.items,
                "measurement_ids": ids,
                "failed_runs": [
                    {"mode": m.mode, "nproc": m.nproc, "status": m.status, "message": m.message}
                    for m in result.measurements
                    if not m.ok
                ],
            },
            table="items",
        )
        _fail_on_failed_runs(result.measurements)
        return
    _print_checklist(result)
    _fail_on_failed_runs(result.measurements)


def _print_checklist(result: ChecklistRun) -> None:
    table = Table(
        title=f"Performance checklist: {escape(result.workload_name)} on {escape(result.target.name)}",
        title_justify="left",
    )
    for column in ("status", "check", "evidence (measured)", "fix"):
        table.add_column(column, overflow="fold")
    for item in result.items:
        style = STATUS_STYLE.get(item.status, "")
        table.add_row(
            f"[{style}]{item.status}[/]", escape(item.title), escape(item.evidence), escape(item.fix or "—")
        )
    print_table(table)


def _fail_on_failed_runs(measurements: Sequence[Measurement]) -> None:
    """A checklist over runs that crashed is no pass: name each failed run, then exit 1."""
    failed = [m for m in measurements if not m.ok]
    for measurement in failed:
        first_line = (measurement.message.strip().splitlines() or [""])[0]
        err_console.print(
            f"[red]error:[/] the {measurement.mode} run (×{measurement.nproc}) ended {measurement.status}: "
            f"{escape(first_line)}",
            highlight=False,
        )
    if failed:
        raise typer.Exit(EXIT_FAILURE)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.add_typer(history_app, name="history")
    app.command("report")(report)
    app.command("check")(check)
