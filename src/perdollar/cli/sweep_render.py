"""Terminal output of ``perdollar sweep``: the dry-run plan, live events and the final table."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from rich.table import Table
from rich.text import Text

from perdollar.cli import common
from perdollar.fmt import format_money

if TYPE_CHECKING:
    from perdollar.launch.outcome import JobOutcome
    from perdollar.launch.spec import JobResources
    from perdollar.launch.sweep import SweepResult


class PlannedJob(TypedDict):
    """One job of a dry run's plan (a row of ``--json``'s ``jobs``)."""

    candidate: str
    why: str
    job: str
    yaml: str  # the job's task file
    duration_s: float
    max_seconds: float
    cost_cap_usd: float
    price_per_hour: float
    resources: JobResources
    run: str


def outcome_row(outcome: JobOutcome) -> dict[str, object]:
    measurement = outcome.measurement
    rate = measurement.samples_per_second if measurement is not None else None
    return {
        "candidate": outcome.job.candidate,
        "job": outcome.job.name,
        "executor": outcome.executor,
        "status": outcome.status,
        "reason": outcome.reason,
        "samples_per_second": rate,
        "measured_on": (measurement.host.instance_type if measurement is not None else None),
        "cost_cap_usd": outcome.job.caps.max_dollars,
        "wall_seconds": outcome.wall_seconds,
        "log": outcome.log_path,
    }


def print_plan(rows: list[PlannedJob], total: float) -> None:
    folder = Path(rows[0]["yaml"]).parent if rows else "—"
    table = Table(title="sweep plan (dry run)", title_justify="left")
    for column in ("#", "candidate", "why", "measures", "killed after", "cost cap", "task YAML"):
        table.add_column(column)
    for i, row in enumerate(rows, 1):
        table.add_row(
            str(i),
            row["candidate"],
            row["why"],
            f"{row['duration_s']:.0f} s",
            f"{row['max_seconds']:.0f} s",
            format_money(row["cost_cap_usd"]),
            Path(row["yaml"]).name,
        )
    common.print_table(table)
    common.console.print(
        f"worst case for all {len(rows)} jobs: {format_money(total)} "
        f"(caps include provisioning and setup time); task files in {folder}",
        highlight=False,
    )


def print_result(result: SweepResult, saved: dict[str, str | None], out_dir: Path) -> None:
    from perdollar.fmt import format_band

    table = Table(title=f"sweep via {result.executor} ({result.strategy})", title_justify="left")
    for column in ("candidate", "status", "samples/s measured", "measured on", "cost cap", "reason"):
        table.add_column(column)
    for outcome in result.outcomes:
        measurement = outcome.measurement
        rate = measurement.samples_per_second if measurement is not None else None
        rate_text = format_band(rate.median, rate.low, rate.high) if rate is not None else "—"
        where = (measurement.host.instance_type if measurement is not None else None) or "—"
        if outcome.executor == "local" and measurement is not None:
            where = "this host (local)"
        cap = format_money(outcome.job.caps.max_dollars) if result.billed else "not billed"
        reason = Text(outcome.reason or "")
        table.add_row(Text(outcome.job.candidate), outcome.status, rate_text, where, cap, reason)
    common.print_table(table)
    for line in result.changes:
        common.console.print(f"• {line}", highlight=False, markup=False)
    spent = (
        f"spent at most {format_money(result.spent_cap_usd)}"
        if result.billed
        else f"spent {format_money(0.0)} (local runs on this machine, not billed; on the cloud these jobs "
        f"would have cost at most {format_money(result.spent_cap_usd)})"
    )
    common.console.print(
        f"stopped: {result.stopped_because}; P(top choice is best) = {result.p_top_is_best:.0%}; "
        f"{spent}; {sum(1 for v in saved.values() if v)} results stored; logs in {out_dir}",
        highlight=False,
    )


def print_event(kind: str, payload: object, *, billed: bool = True) -> None:
    """One stderr line per launch, outcome, skip or failed store while the sweep runs (``billed``:
    whether the jobs are charged, on a cloud, or run on this machine for nothing)."""
    from perdollar.launch.outcome import JobOutcome
    from perdollar.launch.spec import BenchmarkJob
    from perdollar.launch.sweep import SweepProgress

    if kind == "start" and isinstance(payload, BenchmarkJob):
        cost = f"cap {format_money(payload.caps.max_dollars)}" if billed else "on this machine, not billed"
        common.err_console.print(f"→ launching {payload.candidate} ({cost})", highlight=False, markup=False)
    elif kind == "outcome" and isinstance(payload, JobOutcome):
        detail = f": {payload.reason}" if payload.reason else ""
        common.err_console.print(
            f"  {payload.job.candidate}: {payload.status}{detail}", highlight=False, markup=False
        )
    elif kind == "progress" and isinstance(payload, SweepProgress):
        cap = f" of the {format_money(payload.budget_usd)} cap" if payload.budget_usd is not None else ""
        spent = f"at most {format_money(payload.spent_usd)} spent{cap}" if billed else "local, not billed"
        common.err_console.print(
            f"{payload.finished} of {payload.planned} jobs, {spent}", highlight=False, markup=False
        )
    elif kind == "skip":
        common.err_console.print(f"  skipped {payload}", highlight=False, markup=False)
    elif kind == "record-failed":
        common.err_console.print(f"  not stored: {payload}", highlight=False, markup=False)


def print_export(description: Mapping[str, object], *, as_yaml: bool) -> None:
    """The description on stdout (YAML or JSON); its price and provenance on stderr."""
    import json
    import sys

    import yaml

    # Written as is: the terminal console would wrap long strings and break the document.
    if as_yaml:
        sys.stdout.write(yaml.safe_dump(description, sort_keys=False))
        return
    sys.stdout.write(json.dumps(description, indent=2) + "\n")
    price, ec2 = description["price_per_hour_usd"], description.get("ec2_price_per_hour_usd")
    cost = f"{format_money(price)}/h" if isinstance(price, int | float) else "no price in the catalog"
    if isinstance(ec2, int | float):  # a managed service's own rate
        cost += f" as SageMaker bills it (EC2 {format_money(ec2)}/h)"
    common.err_console.print(
        f"{description['instance']} in {description['region']}: {cost} "
        f"(catalog {description['price_captured_at']})",
        highlight=False,
        markup=False,
    )
