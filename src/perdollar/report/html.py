"""The HTML report: one self-contained file that works offline (plotly's JS is embedded).

Every user-provided string goes through :func:`html.escape` before it reaches the page, and
figure JSON inside ``<script>`` has ``<``, ``>`` and ``&`` escaped, so no stored name can close
the script element or inject markup.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.files import why_not_writable, write_file_safely
from perdollar.fmt import format_band, format_hours, format_money, format_si
from perdollar.price.model import Estimate
from perdollar.question import Question
from perdollar.report import plots
from perdollar.report.banner import BANNER_STYLE, banner
from perdollar.report.checklist import CheckItem
from perdollar.report.sorting import SORT_SCRIPT
from perdollar.select.model import Recommendation

RANKED_ROWS = 25
# How a page says it is a perdollar report, so a later run may replace it without asking.
GENERATOR_MARK = "<meta name='generator' content='perdollar'>"
_EARLIER_MARKS = (GENERATOR_MARK.encode(), b"<title>perdollar report:")
EXCLUDED_ROWS = 60
STATUS_MARK = {"pass": "✔ pass", "warn": "▲ warn", "fail": "✖ fail", "unknown": "? unknown"}

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1200px;padding:1.5em;
color:#1b1b1b;background:#fff;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:1.8em;border-bottom:1px solid #ddd}
.meta{color:#555} .answer{font-size:1.15em;background:#f3f8ee;border-left:4px solid #2ca02c;padding:.6em 1em}
table{border-collapse:collapse;width:100%;font-size:.88em}
th,td{padding:.3em .5em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#fafafa} td.num{text-align:right;white-space:nowrap}
.pass{color:#1a7f37} .warn{color:#9a6700} .fail{color:#cf222e} .unknown{color:#6e7781}
details{margin-top:.8em} .note{color:#555;font-size:.9em} .plot{min-height:260px;width:100%}
.scroll{overflow-x:auto;max-width:100%} th.sortable{cursor:pointer} th.sortable:after{content:" ⇅";color:#aaa}
@media (max-width:600px){body{padding:.6em} h1{font-size:1.25em}}
"""




def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _script_json(value: Any) -> str:
    """JSON safe inside a <script> element (cannot close it, cannot start a comment)."""
    text = json.dumps(value, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: set[int] | None = None,
    sortable: bool = False,
) -> str:
    numeric = numeric or set()
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    css = " class='sortable'" if sortable else ""
    # Its own scroll box: a wide table never widens the page on a phone.
    table = f"<table{css}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f"<div class='scroll'>{table}</div>"


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
        _e(estimate.label),
        _e(f"{estimate.accelerator or 'CPU'} × {estimate.accelerators_per_node:g}"),
        _e(
            format_band(
                estimate.samples_per_second, estimate.samples_per_second_low, estimate.samples_per_second_high
            )
        )
        + f" <span class='note'>{_e(estimate.basis)}</span>",
        _e(estimate.bottleneck),
        _e(format_money(estimate.price_per_hour))
        + (f" <span class='note'>{_e(dated)}</span>" if dated else ""),
        _e(_per_dollar(estimate.effective_samples_per_dollar or estimate.samples_per_dollar)),
        _e(format_hours(hours)),
        _e(format_money(cost)),
        _e("—" if estimate.p_meet_deadline is None else f"{estimate.p_meet_deadline:.0%}"),
    ]


def _ranked_section(recommendation: Recommendation) -> str:
    feasible = [e for e in recommendation.estimates if e.feasible]
    excluded = [e for e in recommendation.estimates if not e.feasible]
    ties = set(recommendation.ties)
    target, target_text = plots.target_samples(recommendation)
    headers = ["#", "candidate", "accelerators/node", "samples/s (band, basis)", "bottleneck", "USD/h",
               "samples/USD", f"time to {target_text}", "cost", "P(deadline)"]  # fmt: skip
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
        _table(headers, rows, numeric={3, 5, 6, 7, 8, 9}, sortable=True),
        "<p class='note'>≈ marks candidates whose prediction band overlaps the top choice's. Spot rows "
        "show expected time and cost with interruptions, checkpoints and restarts. A price captured on "
        "another date than the catalog's shows its date, marked stale when it is too old to trust.</p>",
    ]
    flags = sorted({flag for e in feasible[:RANKED_ROWS] for flag in e.flags})
    if flags:
        from perdollar.catalog.provenance import flag_meanings

        meanings = flag_meanings()
        items = "".join(
            f"<li><b>{_e(f)}</b>: {_e(meanings.get(f, 'no explanation recorded'))}</li>" for f in flags
        )
        parts.append(
            f"<p class='note'>Catalog data-quality flags on these rows:</p><ul class='note'>{items}</ul>"
        )
    if excluded:
        reasons = [[_e(e.label), _e(e.excluded_reason)] for e in excluded[:EXCLUDED_ROWS]]
        more = f" (first {EXCLUDED_ROWS})" if len(excluded) > EXCLUDED_ROWS else ""
        parts.append(
            f"<details><summary>Excluded candidates{more}</summary>"
            f"{_table(['candidate', 'why'], reasons)}</details>"
        )
    return "\n".join(parts)


def _question_section(recommendation: Recommendation) -> str:
    question = recommendation.question
    rows = [
        ("workload", question.workload_name),
        ("fingerprint", question.workload_fingerprint),
        ("kind", question.kind),
        ("objective", question.objective),
        ("target", "—" if question.target_samples is None else f"{question.target_samples:.3g} samples"),
        ("deadline", format_hours(question.deadline_hours)),
        ("budget", format_money(question.budget_usd)),
        ("market", question.market),
        ("clouds", ", ".join(question.clouds) or "all"),
        ("regions", ", ".join(question.regions) or "all"),
        ("max nodes", question.max_nodes),
    ]
    rows += [(name, value) for name, value in _settings(question) if value is not None]
    return "<h2>Question and assumptions</h2>" + _table(["", ""], [[_e(k), _e(v)] for k, v in rows])


def _settings(question: Question) -> list[tuple[str, object]]:
    """The question's settings beyond the target, each only where it was given."""
    spot, serving = question.spot, question.serving
    rows: list[tuple[str, object]] = [
        ("confidence", question.confidence if question.deadline_hours else None),
        ("weights", question.weights),
        ("batch size", question.batch_size),
        ("precision", question.precision),
        ("checkpoint", None if spot.checkpoint_seconds is None else f"{spot.checkpoint_seconds:g} s"),
        ("restart", None if spot.restart_minutes is None else f"{spot.restart_minutes:g} min"),
        ("interruptions", None if spot.interruption_rate is None else f"{spot.interruption_rate:.0%}/month"),
    ]
    if serving is not None:
        slo = ", ".join(f"P{round(q * 100)} ≤ {ms:g} ms" for q, ms in serving.slo_ms)
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
            f"<span class='{_e(i.status)}'>{_e(STATUS_MARK.get(i.status, i.status))}</span>",
            _e(i.title),
            _e(i.evidence),
            _e(i.fix or "—"),
        ]
        for i in checklist
    ]
    return "<h2>Performance checklist</h2>" + _table(["status", "check", "evidence", "fix"], rows)


def _figure(div_id: str, figure: dict[str, Any] | None, empty: str) -> str:
    if figure is None:
        return f"<p class='note'>{_e(empty)}</p>"
    config = {"responsive": True, "displaylogo": False}
    return (
        f'<div id="{div_id}" class="plot"></div>\n<script>Plotly.newPlot("{div_id}", '
        f"{_script_json(figure['data'])}, {_script_json(figure['layout'])}, {_script_json(config)});</script>"
    )


def _carbon_section(recommendation: Recommendation) -> str:
    """The cost-vs-carbon front and its points, where the candidates carry emissions."""
    from perdollar.report.carbon_plot import cost_carbon_front, cost_carbon_scatter

    front = cost_carbon_front(recommendation)
    if front is None:
        return ""
    rows = [[_e(p.label), f"{p.carbon:.4g}", f"{p.cost:.4g}"] for p in front.front]
    return (
        "<h2>Cost vs carbon</h2>"
        + _figure("cost-carbon", cost_carbon_scatter(front), "")
        + f"<p class='note'>On the front, lowest emissions first ({_e(front.carbon_unit)}; "
        f"{_e(front.cost_unit)}):</p>"
        + _table(["candidate", "CO2e", "cost"], rows).replace("<table", "<table id='cost-carbon-front'", 1)
    )


def render_report(
    recommendation: Recommendation,
    checklist: Sequence[CheckItem] | None = None,
    *,
    plotly_js: str | None = None,
    generated_at: str | None = None,
) -> str:
    """The whole page as a string (pure, apart from reading plotly's bundled JS)."""
    if plotly_js is None:
        from plotly.offline import get_plotlyjs

        plotly_js = get_plotlyjs()
    question = recommendation.question
    generated = generated_at or dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    notes = "".join(f"<li>{_e(n)}</li>" for n in recommendation.notes)
    body = [
        f"<h1>perdollar: where to run {_e(question.workload_name)}</h1>",
        f"<p class='meta'>Recommended {_e(recommendation.created_at)}; prices from the catalog captured "
        f"<b>{_e(recommendation.catalog_captured_at)}</b> "
        f"(snapshot {_e(recommendation.catalog_snapshot_id)}).</p>",
        banner(recommendation),
        f"<h2>Why</h2><p>{_e(recommendation.explanation)}</p>" + (f"<ul>{notes}</ul>" if notes else ""),
        _question_section(recommendation),
        "<h2>Time vs cost</h2>",
        _figure("time-cost", plots.time_cost_scatter(recommendation), "no feasible candidate to plot"),
        _ranked_section(recommendation),
        _carbon_section(recommendation),
        "<h2>Samples per dollar by accelerator</h2>",
        _figure("per-dollar", plots.samples_per_dollar_bars(recommendation), "no feasible candidate to plot"),
        "<h2>Spot market</h2>",
        _figure("spot", plots.spot_view(recommendation), "no spot candidates in this recommendation"),
        _checklist_section(checklist),
        f"<p class='note'>Catalog captured {_e(recommendation.catalog_captured_at)}. Report generated "
        f"{_e(generated)} by perdollar. Figures: measured = on that machine, calibrated = predicted from a "
        "measurement elsewhere, spec = from hardware specs alone.</p>",
    ]
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>{GENERATOR_MARK}"
        f"<title>perdollar report: {_e(question.workload_name)}</title>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'><link rel='icon' href='data:,'>"
        f"<style>{STYLE}{BANNER_STYLE}</style><script>{plotly_js}</script></head><body>\n"
        + "\n".join(body)
        + f"\n<script>{SORT_SCRIPT}</script>\n</body></html>\n"
    )


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
    recommendation: Recommendation, path: str | Path, checklist: Sequence[CheckItem] | None = None,
    *, force: bool = False,
) -> Path:
    """Write the report to ``path`` atomically (a half-written report never replaces a good one).

    An earlier report at ``path`` is replaced; any other file only with ``force``.
    """
    target = Path(path)
    check_report_target(target, force=force)
    page = render_report(recommendation, checklist)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file_safely(target, page, overwrite=True, option="--output")
    except OSError as error:
        raise PerdollarError(
            f"cannot write the report to {target} ({why_not_writable(error)})",
            "give a path in a folder you can write to",
        ) from None
    return target
