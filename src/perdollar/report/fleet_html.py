"""The report of a fleet over the day: replicas and cost per hour drawn across the day, the day
interval by interval, and what the chosen fleet saves against the static peak.

It is drawn from the stored answer alone (:attr:`Recommendation.fleet`, the figures as plain data),
so a fleet reported from the store shows what was answered, nothing asked again.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

from perdollar.catalog.price_age import is_stale
from perdollar.errors import PerdollarError
from perdollar.fmt import format_hours, format_money
from perdollar.goals import FleetGoal
from perdollar.report.fleet_figures import (
    DAMAGED_FIX,
    Figures,
    fleet_intervals,
    fleet_number,
    fleet_part,
    fleet_texts,
)
from perdollar.report.page import document, escape, fields, figure, table
from perdollar.report.plots import FONT, TITLE_PLACE
from perdollar.select.model import Recommendation

CHOSEN_COLOUR = "#1f77b4"
STATIC_COLOUR = "#d62728"
LOAD_COLOUR = "#7f7f7f"
FLEETS = (
    ("fleet", "chosen fleet"),
    ("autoscaled_single_type", "one type, autoscaled"),
    ("static_peak", "static peak"),
)


def _edges(intervals: Sequence[Figures]) -> list[float]:
    """Each interval's start in hours from the first, and the day's end: where the steps change."""
    edges = [0.0]
    for row in intervals:
        edges.append(edges[-1] + float(fleet_number(row, "duration_s")) / 3600)
    return edges


def _steps(
    name: str,
    values: Sequence[float],
    edges: Sequence[float],
    colour: str,
    line: Mapping[str, object] | None = None,
    **style: object,
) -> dict[str, object]:
    """One series as steps across the day: each value held over its interval."""
    return {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": list(edges),
        "y": [*values, values[-1]],
        "line": {"color": colour, "width": 2.5, "shape": "hv", **(line or {})},
        "hovertemplate": f"{html.escape(name)}: %{{y:.4g}}<extra></extra>",
        **style,
    }


def _axis(intervals: Sequence[Figures], edges: Sequence[float]) -> dict[str, object]:
    return {
        "title": {"text": "the day, interval by interval (start of each)"},
        "tickmode": "array",
        "tickvals": list(edges[:-1]),
        "ticktext": [html.escape(str(r.get("start"))) for r in intervals],
        "range": [0, edges[-1]],
        "automargin": True,
    }


def replicas_over_the_day(intervals: Sequence[Figures]) -> dict[str, object]:
    """Replicas of the chosen fleet and of the static peak, with the load on a second axis."""
    edges = _edges(intervals)
    data = [
        _steps(
            "chosen fleet (replicas)", [fleet_number(r, "replicas") for r in intervals], edges, CHOSEN_COLOUR
        ),
        _steps(
            "static peak (replicas)",
            [fleet_number(r, "static_peak_replicas") for r in intervals],
            edges,
            STATIC_COLOUR,
            line={"dash": "dash"},
        ),
        _steps(
            "load (requests/s)",
            [fleet_number(r, "requests_per_second") for r in intervals],
            edges,
            LOAD_COLOUR,
            yaxis="y2",
            line={"dash": "dot", "width": 1.5},
        ),
    ]
    return {
        "data": data,
        "layout": {
            "title": {"text": "Replicas over the day (the load on the right axis)", **TITLE_PLACE},
            "xaxis": _axis(intervals, edges),
            "yaxis": {"title": {"text": "replicas"}, "rangemode": "tozero"},
            "yaxis2": {
                "title": {"text": "requests per second"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "showgrid": False,
                "tickmode": "auto",
            },
            "height": 400,
            "autosize": True,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.3},
            "margin": {"l": 70, "r": 70, "t": 50, "b": 90},
            "hovermode": "x unified",
        },
    }


def cost_over_the_day(intervals: Sequence[Figures]) -> dict[str, object]:
    """US dollars an hour of the chosen fleet and of the static peak."""
    edges = _edges(intervals)
    data = [
        _steps(
            "chosen fleet ($/h)",
            [fleet_number(r, "usd_per_hour") for r in intervals],
            edges,
            CHOSEN_COLOUR,
            fill="tozeroy",
            fillcolor="rgba(31,119,180,0.12)",
        ),
        _steps(
            "static peak ($/h)",
            [fleet_number(r, "static_peak_usd_per_hour") for r in intervals],
            edges,
            STATIC_COLOUR,
            line={"dash": "dash"},
        ),
    ]
    return {
        "data": data,
        "layout": {
            "title": {"text": "Cost per hour over the day", **TITLE_PLACE},
            "xaxis": _axis(intervals, edges),
            "yaxis": {"title": {"text": "US dollars per hour"}, "tickprefix": "$", "rangemode": "tozero"},
            "height": 400,
            "autosize": True,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.3},
            "margin": {"l": 70, "r": 20, "t": 50, "b": 90},
            "hovermode": "x unified",
        },
    }


def _per_hour(usd: float) -> str:
    return f"${usd:,.2f}"


def _banner(recommendation: Recommendation, figures: Figures) -> str:
    chosen, static = fleet_part(figures, "fleet"), fleet_part(figures, "static_peak")
    saving = figures["saving_vs_static_peak"]
    monthly_saving = fleet_number(static, "usd_per_month") - fleet_number(chosen, "usd_per_month")
    date = recommendation.catalog_captured_at[:10]
    stale = " stale" if is_stale(date, recommendation.created_at) else ""
    return fields(
        [
            ("fleet", "chosen fleet", escape(" + ".join(fleet_texts(chosen, "parts"))), "wide"),
            ("slo", "within", escape(figures["slo"]), "wide"),
            ("usd-per-month", "a month", escape(format_money(fleet_number(chosen, "usd_per_month"))), ""),
            (
                "usd-per-million-output-tokens",
                "per million output tokens",
                escape(f"${chosen['usd_per_million_output_tokens']:.3g}"),
                "",
            ),
            (
                "static-peak",
                "static peak, a month",
                escape(format_money(fleet_number(static, "usd_per_month"))),
                "",
            ),
            ("saving", "saving", escape(f"{saving:.0%} ({format_money(monthly_saving)} a month)"), ""),
            (
                "replay",
                "replay: SLO met in",
                escape(f"{figures['replay_slo_met_share']:.0%} of intervals"),
                "",
            ),
            ("price-date", "prices of", escape(f"{date}{stale}"), ""),
        ],
        "the answer",
    )


def _question_section(recommendation: Recommendation, figures: Figures) -> str:
    question = recommendation.question
    goal, settings = question.goal, question.language_model
    traffic = goal.traffic if isinstance(goal, FleetGoal) else None
    rows: list[tuple[str, object]] = [
        ("model", question.workload_name),
        ("traffic", None if traffic is None else f"{traffic.source} ({traffic.kind})"),
        ("SLO", figures["slo"]),
        (
            "request",
            None
            if settings is None or traffic is None or traffic.kind != "load-curve"
            else f"{settings.input_tokens or 'default'} tokens in, {settings.output_tokens or 'default'} out",
        ),
        ("market", question.market),
        ("clouds", ", ".join(question.clouds) or "all"),
        ("regions", ", ".join(question.regions) or "all"),
        (
            "autoscaling",
            None
            if traffic is None
            else f"to {traffic.target_utilisation:.0%} of the SLO capacity, "
            f"at least {traffic.min_replicas} replica(s)",
        ),
        ("availability", None if traffic is None else f"{traffic.availability:.2%}"),
        ("instance start", None if traffic is None else f"{traffic.instance_start_s:g} s"),
    ]
    shown = [[escape(name), escape(value)] for name, value in rows if value is not None]
    return "<h2>Question and assumptions</h2>" + table(["", ""], shown)


def _hours_section(intervals: Sequence[Figures]) -> str:
    rows = []
    for row in intervals:
        static_peak_per_hour = fleet_number(row, "static_peak_usd_per_hour")
        met = "<span class='pass'>✔</span>" if row["meets_slo"] else "<span class='fail'>✖ missed</span>"
        added = (
            f" <span class='note'>+{row['added_by_replay']} by replay</span>"
            if row["added_by_replay"]
            else ""
        )
        rows.append(
            [
                escape(row["start"]),
                escape(format_hours(float(fleet_number(row, "duration_s")) / 3600)),
                escape(f"{row['requests_per_second']:.3g}"),
                escape(str(row["replicas"])),
                escape(row["fleet"]) + added,
                escape(f"{row['spot_instances']} / {row['on_demand_instances']}"),
                escape(_per_hour(fleet_number(row, "usd_per_hour"))),
                escape(f"{row['static_peak_replicas']} · {_per_hour(static_peak_per_hour)}"),
                escape(f"{row['replay_ttft_p99_ms']:.0f} / {row['replay_tpot_p99_ms']:.1f}") + f" {met}",
            ]
        )
    headers = [
        "start",
        "for",
        "load (requests/s)",
        "replicas",
        "instances by machine and market",
        "spot / on-demand",
        "$/h",
        "static peak (replicas · $/h)",
        "replay p99 TTFT / TPOT ms",
    ]
    return (
        "<h2>Hour by hour</h2>"
        + table(headers, rows, numeric={1, 2, 3, 5, 6, 7, 8}, table_id="per-hour")
        + "<p class='note'>Each interval's replicas sized to its load; the replay serves the interval's "
        "requests against them and checks the SLO's p99 latencies.</p>"
    )


# The figures of a fleet's answer that its page draws and that asking it again compares, by part:
# the whole answer, each interval, and each of the three fleets. True: a number; False: a text.
ANSWER_FIGURES = {"slo": False, "saving_vs_static_peak": True, "replay_slo_met_share": True}
INTERVAL_FIGURES = {"start": False, "replicas": True, "static_peak_replicas": True, "usd_per_hour": True,
                    "static_peak_usd_per_hour": True}  # fmt: skip
FLEET_FIGURES = {"usd_per_month": True, "usd_per_million_output_tokens": True, "spot_share": True}
FLEET_KEYS = ("fleet", "autoscaled_single_type", "static_peak")


def check_fleet_figures(document: Figures) -> None:
    """A one-line error naming the first figure the page or a comparison needs that is missing or
    is not what it should be (a stored fleet can be damaged by hand)."""
    _check_figures(document, ANSWER_FIGURES, "")
    intervals = document.get("intervals")
    if not isinstance(intervals, list) or not intervals:
        raise PerdollarError("the fleet's intervals are missing", DAMAGED_FIX)
    for index, interval in enumerate(intervals):
        _check_figures(interval, INTERVAL_FIGURES, f"intervals[{index}].")
    for key in FLEET_KEYS:
        parts = _check_figures(document.get(key), FLEET_FIGURES, f"{key}.").get("parts")
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            raise PerdollarError(f"the fleet's {key}.parts is not a list of machines", DAMAGED_FIX)
    if not isinstance(document.get("notes"), list | tuple):
        raise PerdollarError("the fleet's notes are missing", DAMAGED_FIX)


def _check_figures(part: object, figures: Mapping[str, bool], where: str) -> Figures:
    if not isinstance(part, Mapping):
        raise PerdollarError(f"the fleet's {where.rstrip('.') or 'answer'} is missing", DAMAGED_FIX)
    for name, numeric in figures.items():
        value = part.get(name)
        if value is None:
            raise PerdollarError(f"the fleet's {where}{name} is missing", DAMAGED_FIX)
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if numeric != number if numeric else not isinstance(value, str):
            shown = str(value)[:40]
            raise PerdollarError(
                f"the fleet's {where}{name} is {shown!r}, not {'a number' if numeric else 'a text'}",
                DAMAGED_FIX,
            )
    return part


def _static_peak_section(figures: Figures) -> str:
    rows = [
        [
            escape(name),
            escape("; ".join(fleet_texts(fleet_part(figures, key), "parts"))),
            escape(format_money(fleet_number(fleet_part(figures, key), "usd_per_month"))),
            escape(f"${fleet_number(fleet_part(figures, key), 'usd_per_million_output_tokens'):.3g}"),
            escape(f"${fleet_number(fleet_part(figures, key), 'usd_per_million_tokens'):.3g}"),
            escape(f"{fleet_number(fleet_part(figures, key), 'spot_share'):.0%}"),
        ]
        for key, name in FLEETS
        if key in figures
    ]
    chosen = fleet_number(fleet_part(figures, "fleet"), "usd_per_month")
    static = fleet_number(fleet_part(figures, "static_peak"), "usd_per_month")
    return (
        "<h2>Against the static peak</h2>"
        f"<p data-field='saving-sentence'>Sized for the busiest interval all day, the static peak costs "
        f"<b>{escape(format_money(static))}</b> a month; the chosen fleet, "
        f"<b>{escape(format_money(chosen))}</b>: <b>{figures['saving_vs_static_peak']:.0%}</b> less, "
        f"{escape(format_money(static - chosen))} a month saved.</p>"
        + table(
            ["fleet", "machines", "a month", "$/M output tokens", "$/M tokens (in and out)", "spot share"],
            rows,
            numeric={2, 3, 4, 5},
            table_id="fleets",
        )
    )


def render_fleet_report(recommendation: Recommendation, plotly_js: str, generated_at: str) -> str:
    """The whole page of a fleet over the day, as a string (a damaged stored fleet: a one-line error)."""
    figures = recommendation.fleet or {}
    check_fleet_figures(figures)
    intervals = fleet_intervals(figures)
    question = recommendation.question
    notes = "".join(f"<li>{escape(note)}</li>" for note in figures.get("notes", recommendation.notes))
    charts = (
        "<h2>Replicas and cost over the day</h2><div class='pair'>"
        + figure("replicas-over-the-day", replicas_over_the_day(intervals), "")
        + figure("cost-over-the-day", cost_over_the_day(intervals), "")
        + "</div>"
        if intervals
        else "<h2>Replicas and cost over the day</h2>"
        "<p class='note'>The answer holds no interval to draw.</p>"
    )
    body = [
        f"<h1>perdollar: a fleet for {escape(question.workload_name)} over the day</h1>",
        f"<p class='meta'>Answered {escape(recommendation.created_at)}; prices from the catalog captured "
        f"<b>{escape(recommendation.catalog_captured_at)}</b> "
        f"(snapshot {escape(recommendation.catalog_snapshot_id)}).</p>",
        _banner(recommendation, figures),
        f"<h2>Why</h2><p>{escape(recommendation.explanation)}</p>",
        _question_section(recommendation, figures),
        charts,
        _hours_section(intervals) if intervals else "",
        _static_peak_section(figures),
        f"<h2>Assumptions</h2><ul>{notes}</ul>" if notes else "",
        f"<p class='note'>Prices from the catalog captured {escape(recommendation.catalog_captured_at)}. "
        f"Report generated {escape(generated_at)} by perdollar.</p>",
    ]
    return document(f"fleet for {question.workload_name}", body, plotly_js)
