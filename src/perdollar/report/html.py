"""The HTML report: one self-contained file that works offline (plotly's JS is embedded).

A training question's report is drawn here; a language model's serving question and a fleet over
the day have reports of their own (:mod:`perdollar.report.llm_serving_html`,
:mod:`perdollar.report.fleet_html`), and :func:`render_report` draws each answer with its own.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from perdollar.errors import PerdollarError
from perdollar.files import why_not_writable, write_file_safely
from perdollar.fmt import format_band, format_hours, format_money, format_si
from perdollar.goals import TrainingGoal, served, trained
from perdollar.price.model import Estimate
from perdollar.question import Question
from perdollar.report import plots
from perdollar.report.banner import banner
from perdollar.report.carbon_plot import carbon_section
from perdollar.report.checklist import CheckItem
from perdollar.report.page import GENERATOR_MARK, document, escape, figure, plotly_bundle, table
from perdollar.report.tables import shape
from perdollar.select.model import Recommendation

ReportKind = Literal["training", "serving", "fleet"]
RANKED_ROWS = 25
_EARLIER_MARKS = (GENERATOR_MARK.encode(), b"<title>perdollar report:")
EXCLUDED_ROWS = 60
STATUS_MARK = {"pass": "✔ pass", "warn": "▲ warn", "fail": "✖ fail", "unknown": "? unknown"}


def _per_dollar(value: float | None) -> str:
    return format_si(value) if value is not None and math.isfinite(value) else "—"


def _to_target(estimate: Estimate, target: float) -> tuple[float | None, float | None]:
    """Time (h) and cost (USD) to the target: spot ones with expected losses; computed from the
    rate when the question had no target."""
    if estimate.market == "spot" and estimate.expected_time_hours is not None:
        return estimate.expected_time_hours, estimate.expected_cost_usd
    if estimate.time_to_target_hours is not None:
        return estimate.time_to_target_hours, estimate.cost_to_target_usd
    figures = plots.time_and_cost(estimate, target)
    return (figures[0], figures[3]) if figures else (None, None)


def _ranked_row(rank: int, estimate: Estimate, tie: bool, target: float, dated: str = "") -> list[str]:
    hours, cost = _to_target(estimate, target)
    return [
        f"{rank}{' ≈' if tie else ''}",
        escape(estimate.label),
        escape(shape(estimate).replace("\n", " ")),
        escape(
            format_band(
                estimate.samples_per_second, estimate.samples_per_second_low, estimate.samples_per_second_high
            )
        )
        + f" <span class='note'>{escape(estimate.basis)}</span>",
        escape(estimate.bottleneck),
        escape(format_money(estimate.price_per_hour))
        + (f" <span class='note'>{escape(dated)}</span>" if dated else ""),
        escape(_per_dollar(estimate.effective_samples_per_dollar or estimate.samples_per_dollar)),
        escape(format_hours(hours)),
        escape(format_money(cost)),
        escape("—" if estimate.p_meet_deadline is None else f"{estimate.p_meet_deadline:.0%}"),
    ]


def _ranked_section(recommendation: Recommendation) -> str:
    feasible = [e for e in recommendation.estimates if e.feasible]
    excluded = [e for e in recommendation.estimates if not e.feasible]
    ties = set(recommendation.ties)
    target, target_text = plots.target_samples(recommendation)
    headers = ["#", "candidate", "accelerators (nodes × each)", "samples/s (band, basis)", "bottleneck",
               "USD/h", "samples/USD", f"time to {target_text}", "cost", "P(deadline)"]  # fmt: skip
    from perdollar.catalog.price_age import price_date_note

    rows = [
        _ranked_row(
            i + 1, e, i in ties, target,
            price_date_note(e.captured_at, recommendation.catalog_captured_at, recommendation.created_at),
        )
        for i, e in enumerate(feasible[:RANKED_ROWS])
    ]  # fmt: skip
    parts = [
        f"<h2>Ranked candidates ({len(feasible)} feasible, {len(excluded)} excluded)</h2>",
        table(headers, rows, numeric={3, 5, 6, 7, 8, 9}, sortable=True),
        "<p class='note'>≈ marks candidates whose prediction band overlaps the top choice's. Spot rows "
        "show expected time and cost with interruptions, checkpoints and restarts. A price captured on "
        "another date than the catalog's shows its date, marked stale when it is too old to trust.</p>",
    ]
    flags = sorted({flag for e in feasible[:RANKED_ROWS] for flag in e.flags})
    if flags:
        from perdollar.catalog.provenance import flag_meanings

        meanings = flag_meanings()
        items = "".join(
            f"<li><b>{escape(f)}</b>: {escape(meanings.get(f, 'no explanation recorded'))}</li>"
            for f in flags
        )
        parts.append(
            f"<p class='note'>Catalog data-quality flags on these rows:</p><ul class='note'>{items}</ul>"
        )
    if excluded:
        reasons = [[escape(e.label), escape(e.excluded_reason)] for e in excluded[:EXCLUDED_ROWS]]
        more = f" (first {EXCLUDED_ROWS})" if len(excluded) > EXCLUDED_ROWS else ""
        parts.append(
            f"<details><summary>Excluded candidates{more}</summary>"
            f"{table(['candidate', 'why'], reasons)}</details>"
        )
    return "\n".join(parts)


def _question_section(recommendation: Recommendation) -> str:
    question = recommendation.question
    goal = trained(question.goal) or TrainingGoal()  # a deployment has no target, deadline or budget
    rows = [
        ("workload", question.workload_name),
        ("fingerprint", question.workload_fingerprint),
        ("kind", question.goal.kind),
        ("objective", question.goal.objective),
        ("target", "—" if goal.target_samples is None else f"{goal.target_samples:.3g} samples"),
        ("deadline", format_hours(goal.deadline_hours)),
        ("budget", format_money(goal.budget_usd)),
        ("market", question.market),
        ("clouds", ", ".join(question.clouds) or "all"),
        ("regions", ", ".join(question.regions) or "all"),
        ("max nodes", question.max_nodes),
    ]
    rows += [(name, value) for name, value in _settings(question) if value is not None]
    return "<h2>Question and assumptions</h2>" + table(["", ""], [[escape(k), escape(v)] for k, v in rows])


def _settings(question: Question) -> list[tuple[str, object]]:
    """The question's settings beyond the target, each only where it was given."""
    spot, serving, goal = question.spot, served(question.goal), trained(question.goal)
    rows: list[tuple[str, object]] = [
        ("confidence", goal.confidence if goal and goal.deadline_hours else None),
        ("weights", goal.weights if goal else None),
        ("batch size", question.batch_size),
        ("precision", question.precision),
        ("checkpoint", None if spot.checkpoint_seconds is None else f"{spot.checkpoint_seconds:g} s"),
        ("restart", None if spot.restart_minutes is None else f"{spot.restart_minutes:g} min"),
        ("interruptions", None if spot.interruption_rate is None else f"{spot.interruption_rate:.0%}/month"),
    ]
    if serving is not None:
        slo = ", ".join(f"P{round(q * 100)} ≤ {ms:g} ms" for q, ms in serving.slo.items())
        rows += [("rate", f"{serving.qps:g} requests/s"), ("SLO", slo), ("max wait", serving.max_wait_ms)]
    return rows


def _checklist_section(checklist: Sequence[CheckItem] | None) -> str:
    if not checklist:
        return (
            "<h2>Performance checklist</h2><p class='note'>Not evaluated for this report: run "
            "<code>perdollar check WORKLOAD</code> for the measured checklist.</p>"
        )
    rows = [
        [
            f"<span class='{escape(i.status)}'>{escape(STATUS_MARK.get(i.status, i.status))}</span>",
            escape(i.title),
            escape(i.evidence),
            escape(i.fix or "—"),
        ]
        for i in checklist
    ]
    return "<h2>Performance checklist</h2>" + table(["status", "check", "evidence", "fix"], rows)


def report_kind(recommendation: Recommendation) -> ReportKind:
    """Which report draws this answer: a fleet over the day, a language model served, or training."""
    if recommendation.fleet is not None:
        return "fleet"
    question = recommendation.question
    if question.goal.kind == "inference" and question.language_model is not None:
        return "serving"
    return "training"


def render_report(
    recommendation: Recommendation,
    checklist: Sequence[CheckItem] | None = None,
    *,
    plotly_js: str | None = None,
    generated_at: str | None = None,
) -> str:
    """The whole page as a string (pure, apart from reading plotly's bundled JS).

    The performance checklist belongs to training; the serving and fleet reports have none.
    """
    generated = generated_at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    kind = report_kind(recommendation)
    if kind == "serving":
        from perdollar.report.llm_serving_html import render_serving_report

        return render_serving_report(recommendation, plotly_bundle(plotly_js), generated)
    if kind == "fleet":
        from perdollar.report.fleet_html import render_fleet_report

        return render_fleet_report(recommendation, plotly_bundle(plotly_js), generated)
    question = recommendation.question
    notes = "".join(f"<li>{escape(n)}</li>" for n in recommendation.notes)
    body = [
        f"<h1>perdollar: where to run {escape(question.workload_name)}</h1>",
        f"<p class='meta'>Recommended {escape(recommendation.created_at)}; prices from the catalog captured "
        f"<b>{escape(recommendation.catalog_captured_at)}</b> "
        f"(snapshot {escape(recommendation.catalog_snapshot_id)}).</p>",
        banner(recommendation),
        f"<h2>Why</h2><p>{escape(recommendation.explanation)}</p>" + (f"<ul>{notes}</ul>" if notes else ""),
        _question_section(recommendation),
        "<h2>Time vs cost</h2>",
        figure("time-cost", plots.time_cost_scatter(recommendation), "no feasible candidate to plot"),
        _ranked_section(recommendation),
        carbon_section(recommendation),
        "<h2>Samples per dollar by accelerator</h2>",
        figure("per-dollar", plots.samples_per_dollar_bars(recommendation), "no feasible candidate to plot"),
        "<h2>Spot market</h2>",
        figure("spot", plots.spot_view(recommendation), "no spot candidates in this recommendation"),
        _checklist_section(checklist),
        f"<p class='note'>Catalog captured {escape(recommendation.catalog_captured_at)}. Report generated "
        f"{escape(generated)} by perdollar. Figures: measured = on that machine, calibrated = predicted "
        "from a measurement elsewhere, spec = from hardware specs alone.</p>",
    ]
    return document(question.workload_name, body, plotly_bundle(plotly_js))


def is_replaceable(target: Path) -> bool:
    """True when writing ``target`` loses nothing: it is absent or an earlier perdollar report."""
    if not target.exists():
        return True
    try:
        with target.open("rb") as stream:
            head = stream.read(4096)
        return target.is_file() and any(mark in head for mark in _EARLIER_MARKS)
    except OSError:
        return False


def check_report_target(path: str | Path, *, force: bool = False) -> None:
    """Refuse, before any work, to replace a file that is not an earlier report (unless ``force``)."""
    target = Path(path)
    if target.is_dir():
        raise PerdollarError(f"{target} is a folder", "give the path of an .html file to write")
    if not force and not is_replaceable(target):
        raise PerdollarError(
            f"{target} already exists and is not a perdollar report; it was left as it is",
            "give a new path, or replace it on purpose with `perdollar report --force -o PATH`",
        )


def write_report(
    recommendation: Recommendation,
    path: str | Path,
    checklist: Sequence[CheckItem] | None = None,
    *,
    force: bool = False,
    option: str = "--output",
) -> Path:
    """Write the report to ``path`` atomically (a half-written report never replaces a good one).

    An earlier report at ``path`` is replaced; any other file only with ``force``. ``option``: the
    command's option that named ``path``, as a refusal names it.
    """
    target = Path(path)
    check_report_target(target, force=force)
    page = render_report(recommendation, checklist)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file_safely(target, page, overwrite=True, option=option)
    except OSError as error:
        raise PerdollarError(
            f"cannot write the report to {target} ({why_not_writable(error)})",
            "give a path in a folder you can write to",
        ) from None
    return target
