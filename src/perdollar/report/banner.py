"""The report's first lines: the answer a reader came for, before any chart.

Configuration and plan, the price per hour, time and cost to the target with their bands, the
chance of meeting the deadline and the date of the price: each a labelled field (``data-field``)
so a reader, a screen reader and a test find the same thing.
"""

from __future__ import annotations

import html

from perdollar.catalog.price_age import price_date_note
from perdollar.fmt import format_hours, format_money
from perdollar.goals import trained
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation

BANNER_STYLE = """
.banner{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:.4em 1.2em;
background:#f3f8ee;border-left:4px solid #2ca02c;padding:.7em 1em;margin:.6em 0}
.banner div{min-width:0} .banner dt{color:#555;font-size:.8em;text-transform:uppercase;letter-spacing:.03em}
.banner dd{margin:0;font-size:1.05em;font-weight:600;overflow-wrap:anywhere}
.banner .wide{grid-column:1/-1} .banner .band{font-weight:400;color:#555;font-size:.85em}
"""


def _band(hours_low: float | None, hours_high: float | None, formatter: object) -> str:
    if hours_low is None or hours_high is None:
        return ""
    text = f"{formatter(hours_low)} … {formatter(hours_high)}"  # type: ignore[operator]
    return f" <span class='band'>({html.escape(text)})</span>"


def _to_target(top: Estimate, target: float | None) -> tuple[str, str]:
    """Time and cost to the target (expected ones for spot), each with the band of the rate."""
    if not target:
        return "—", "—"
    spot = top.market == "spot" and top.expected_time_hours is not None
    hours = top.expected_time_hours if spot else top.time_to_target_hours
    cost = top.expected_cost_usd if spot else top.cost_to_target_usd
    if hours is None or cost is None:
        return "—", "—"
    # The rate's band stretches time and cost alike (the price per hour is known).
    scale_fast = top.samples_per_second / top.samples_per_second_high if top.samples_per_second_high else None
    scale_slow = top.samples_per_second / top.samples_per_second_low if top.samples_per_second_low else None
    time_band = (
        _band(hours * scale_fast, hours * scale_slow, format_hours) if scale_fast and scale_slow else ""
    )
    cost_band = _band(cost * scale_fast, cost * scale_slow, format_money) if scale_fast and scale_slow else ""
    prefix = "expected " if spot else ""
    return (
        f"{prefix}{html.escape(format_hours(hours))}{time_band}",
        f"{prefix}{html.escape(format_money(cost))}{cost_band}",
    )


def _data_parallel(estimate: Estimate) -> str:
    devices = estimate.nodes * estimate.accelerators_per_node
    kind = "accelerators" if estimate.accelerator else "hosts"
    return f"data parallel over {devices:g} {kind}" if devices > 1 else "one replica"


def banner(recommendation: Recommendation) -> str:
    """The top choice at a glance, as a definition list; one sentence when nothing is feasible."""
    top = next((e for e in recommendation.estimates if e.feasible), None)
    if top is None:
        return "<p class='answer' data-field='answer'>No candidate satisfies the constraints.</p>"
    goal = trained(recommendation.question.goal)
    target, deadline_hours = (goal.target_samples, goal.deadline_hours) if goal else (None, None)
    time_text, cost_text = _to_target(top, target)
    dated = price_date_note(top.captured_at, recommendation.catalog_captured_at, recommendation.created_at)
    # The note already names the date when it differs from the catalog's (and says stale when old).
    price_date = dated or (top.captured_at or recommendation.catalog_captured_at)[:10]
    p_deadline = "—" if top.p_meet_deadline is None else f"{top.p_meet_deadline:.0%}"
    if deadline_hours and top.p_meet_deadline is not None:
        p_deadline += f" <span class='band'>(by {html.escape(format_hours(deadline_hours))})</span>"
    fields = [
        ("configuration", "top choice", html.escape(top.label), "wide"),
        (
            "plan",
            "plan",
            html.escape(top.plan_text or top.plan or "data parallel, one replica per GPU"),
            "wide",
        ),
        (
            "price",
            "price",
            f"{html.escape(format_money(top.price_per_hour))}/h ({html.escape(top.market)})",
            "",
        ),
        ("time", "time to target", time_text, ""),
        ("cost", "cost to target", cost_text, ""),
        ("p-deadline", "P(deadline)", p_deadline, ""),
        ("price-date", "price of", html.escape(price_date), ""),
    ]
    items = "".join(
        f"<div class='{css}' data-field='{key}'><dt>{html.escape(label)}</dt><dd>{value}</dd></div>"
        for key, label, value, css in fields
    )
    return f"<dl class='banner' aria-label='the answer'>{items}</dl>"
