"""Plotly figures of a recommendation, as plain figure dicts (data + layout).

Every string that reaches a figure is HTML-escaped first: plotly renders labels as a subset
of HTML, so a model named ``<script>…`` must arrive as text, not markup.
"""

from __future__ import annotations

import html
import math

from perdollar.goals import trained
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation

REFERENCE_SAMPLES = 1e9  # when the question has no target, plots show time and cost per 1e9 samples
MARKET_COLOURS = {"on-demand": "#1f77b4", "spot": "#ff7f0e"}
# The bands, faint: many overlapping bars would otherwise cross-hatch the points they belong to.
BAND_COLOURS = {"on-demand": "rgba(31,119,180,0.3)", "spot": "rgba(255,127,14,0.3)"}
LABELLED_POINTS = 5  # the best few by rank get their name on the chart; the rest on hover
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13}
# A chart's title on the left: the toolbar Plotly shows on the right would cover a centred one.
TITLE_PLACE = {"x": 0.01, "xanchor": "left"}


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def target_samples(recommendation: Recommendation) -> tuple[float, str]:
    goal = trained(recommendation.question.goal)
    target = goal.target_samples if goal else None
    if target:
        return target, f"{target:.3g} samples"
    return REFERENCE_SAMPLES, f"{REFERENCE_SAMPLES:.0e} samples (no target given)"


def time_and_cost(
    estimate: Estimate, target: float
) -> tuple[float, float, float, float, float, float] | None:
    """Hours and USD to ``target`` samples: value, low, high for each (from the rate band)."""
    rate, low, high = (
        estimate.samples_per_second,
        estimate.samples_per_second_low,
        estimate.samples_per_second_high,
    )
    if not (_finite(rate) and _finite(estimate.price_per_hour)):
        return None
    low = low if _finite(low) else rate
    high = high if _finite(high) else rate
    hours = target / rate / 3600
    hours_fast, hours_slow = target / high / 3600, target / low / 3600
    price = estimate.price_per_hour
    return hours, hours_fast, hours_slow, hours * price, hours_fast * price, hours_slow * price


def _hover(estimate: Estimate, hours: float, cost: float) -> str:
    return "<br>".join(
        [
            html.escape(estimate.label),
            f"{html.escape(estimate.accelerator or 'CPU')} × {estimate.accelerators_per_node:g} per node",
            f"{estimate.samples_per_second:,.4g} samples/s ({html.escape(estimate.basis)})",
            f"{hours:,.3g} h, ${cost:,.4g} to target",
            f"${estimate.price_per_hour:,.4g}/h; bottleneck: {html.escape(estimate.bottleneck)}",
        ]
    )


def time_cost_scatter(recommendation: Recommendation) -> dict[str, object]:
    target, target_text = target_samples(recommendation)
    traces: list[dict[str, object]] = []
    for market, colour in MARKET_COLOURS.items():
        xs, ys, lo_x, hi_x, lo_y, hi_y, text = [], [], [], [], [], [], []
        for estimate in recommendation.estimates:
            figures = (
                time_and_cost(estimate, target) if estimate.feasible and estimate.market == market else None
            )
            if figures is None:
                continue
            hours, fast, slow, cost, cost_low, cost_high = figures
            xs.append(hours)
            ys.append(cost)
            lo_x.append(hours - fast)
            hi_x.append(slow - hours)
            lo_y.append(cost - cost_low)
            hi_y.append(cost_high - cost)
            text.append(_hover(estimate, hours, cost))
        if xs:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": market,
                    "x": xs,
                    "y": ys,
                    "text": text,
                    "hoverinfo": "text",
                    "marker": {"color": colour, "size": 8, "opacity": 0.75},
                    "error_x": {
                        "type": "data",
                        "symmetric": False,
                        "array": hi_x,
                        "arrayminus": lo_x,
                        "thickness": 1,
                        "width": 0,
                        "color": BAND_COLOURS[market],
                    },
                    "error_y": {
                        "type": "data",
                        "symmetric": False,
                        "array": hi_y,
                        "arrayminus": lo_y,
                        "thickness": 1,
                        "width": 0,
                        "color": BAND_COLOURS[market],
                    },
                }
            )
    front = [recommendation.estimates[i] for i in recommendation.pareto if i < len(recommendation.estimates)]
    points = sorted(
        (figures[0], figures[3], _hover(e, figures[0], figures[3]))
        for e in front
        if (figures := time_and_cost(e, target)) is not None
    )
    if points:
        traces.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "Pareto front (time vs cost)",
                "x": [p[0] for p in points],
                "y": [p[1] for p in points],
                "text": [p[2] for p in points],
                "hoverinfo": "text",
                "line": {"color": "#2ca02c", "width": 2, "shape": "hv"},
                "marker": {"color": "#2ca02c", "size": 10, "symbol": "diamond"},
            }
        )
    top = next((e for e in recommendation.estimates if e.feasible), None)
    if top is not None and (figures := time_and_cost(top, target)) is not None:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "top choice",
                "x": [figures[0]],
                "y": [figures[3]],
                "text": [_hover(top, figures[0], figures[3])],
                "hoverinfo": "text",
                "marker": {
                    "color": "#d62728",
                    "size": 18,
                    "symbol": "star",
                    "line": {"color": "#000", "width": 1},
                },
            }
        )
    labels = _point_labels(recommendation, target)
    if labels:
        traces.append(labels)
    goal = trained(recommendation.question.goal)
    deadline = goal.deadline_hours if goal else None
    shapes, annotations = [], []
    if deadline:
        # A vertical line at the deadline: points to its right finish too late (at their centre).
        line = {"color": "#cf222e", "width": 1.5, "dash": "dash"}
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": deadline, "x1": deadline,
                       "y0": 0, "y1": 1, "line": line})  # fmt: skip
        # Annotations on a log axis are placed in log10 units; shapes in data units.
        annotations.append({"x": math.log10(deadline), "xref": "x", "y": 1, "yref": "paper",
                            "yanchor": "bottom", "text": f"deadline {deadline:g} h", "showarrow": False,
                            "font": {"color": "#cf222e"}})  # fmt: skip
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Time vs cost to {html.escape(target_text)} — bars: prediction band"},
            "xaxis": {"title": {"text": "time to target (hours, log scale)"}, "type": "log",
                      **log_ticks(_spread(traces, "x"), "{:g} h"), "automargin": True},
            "yaxis": {"title": {"text": "cost to target (US dollars, log scale)"}, "type": "log",
                      **log_ticks(_spread(traces, "y"), "${:,g}"), "automargin": True},
            "hovermode": "closest",
            "height": 520,
            "autosize": True,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.2},
            "margin": {"l": 70, "r": 20, "t": 60, "b": 90},
            "shapes": shapes,
            "annotations": annotations,
        },
    }  # fmt: skip


def _spread(traces: list[dict[str, object]], axis: str) -> tuple[float, float] | None:
    """The smallest and largest finite positive value the traces put on ``axis``."""
    values: list[float] = []
    for trace in traces:
        points = trace.get(axis, [])
        if isinstance(points, list | tuple):  # the traces built above list their points
            values += [v for v in points if isinstance(v, int | float) and _finite(v)]
    return (min(values), max(values)) if values else None


def log_ticks(spread: tuple[float, float] | None, label: str) -> dict[str, object]:
    """Ticks at 1, 2 and 5 of each decade over the data, every one with its unit ("20 h", "$500")."""
    if spread is None:
        return {}
    low, high = spread[0] / 1.5, spread[1] * 1.5
    ticks = [
        step * 10.0**decade
        for decade in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for step in (1, 2, 5)
        if low <= step * 10.0**decade <= high
    ]
    text = [label.format(float(f"{tick:.3g}")) for tick in ticks]
    return {"tickmode": "array", "tickvals": ticks, "ticktext": text}


def _point_labels(recommendation: Recommendation, target: float) -> dict[str, object] | None:
    """Names beside the best few points (rank order), so the chart reads without hovering."""
    feasible = [e for e in recommendation.estimates if e.feasible][:LABELLED_POINTS]
    placed = [(e, figures) for e in feasible if (figures := time_and_cost(e, target)) is not None]
    if not placed:
        return None
    return {
        "type": "scatter",
        "mode": "text",
        "name": "labels",
        "showlegend": False,
        "hoverinfo": "skip",
        "x": [figures[0] for _, figures in placed],
        "y": [figures[3] for _, figures in placed],
        "text": [f"#{i + 1} {html.escape(e.label.split(' (')[0])}" for i, (e, _) in enumerate(placed)],
        "textposition": ["top right" if i % 2 == 0 else "bottom right" for i in range(len(placed))],
        "textfont": {"size": 11, "color": "#333"},
        "cliponaxis": False,
    }


def samples_per_dollar_bars(recommendation: Recommendation) -> dict[str, object]:
    """The best samples per dollar each accelerator reaches (any instance, market, node count)."""
    best: dict[str, Estimate] = {}
    for estimate in recommendation.estimates:
        if not estimate.feasible or not _finite(estimate.samples_per_dollar):
            continue
        name = estimate.accelerator or "CPU only"
        if name not in best or estimate.samples_per_dollar > best[name].samples_per_dollar:
            best[name] = estimate
    ranked = sorted(best.items(), key=lambda item: item[1].samples_per_dollar)
    values = [e.samples_per_dollar for _, e in ranked]

    def per_dollar(rate: float, estimate: Estimate) -> float:
        return rate * 3600 / estimate.price_per_hour if _finite(rate) else estimate.samples_per_dollar

    low = [v - per_dollar(e.samples_per_second_low, e) for v, (_, e) in zip(values, ranked, strict=True)]
    high = [per_dollar(e.samples_per_second_high, e) - v for v, (_, e) in zip(values, ranked, strict=True)]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "x": values,
                "y": [html.escape(name) for name, _ in ranked],
                "text": [html.escape(e.label) for _, e in ranked],
                "textposition": "none",  # the label is in the hover, never printed across the bar
                "hovertemplate": "%{y}: %{x:,.4g} samples/$<br>%{text}<extra></extra>",
                "marker": {"color": [MARKET_COLOURS.get(e.market, "#888") for _, e in ranked]},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": high,
                    "arrayminus": low,
                    "thickness": 1,
                    "width": 3,
                    "color": "rgba(0,0,0,0.35)",
                },
            }
        ],
        "layout": {
            "title": {"text": "Best samples per dollar per accelerator (blue on-demand, orange spot)"},
            "xaxis": {"title": {"text": "samples per US dollar"}, "rangemode": "tozero"},
            "yaxis": {"automargin": True},
            "height": max(260, 28 * len(ranked) + 120),
            "font": FONT,
            "margin": {"l": 160, "r": 20, "t": 50, "b": 50},
        },
    }


def spot_view(recommendation: Recommendation) -> dict[str, object] | None:
    """Spot candidates: expected cost (interruptions, checkpoints, restarts included) against the
    probability of meeting the deadline, or against expected time when there is no deadline."""
    target, target_text = target_samples(recommendation)
    points = []
    for estimate in recommendation.estimates:
        if not estimate.feasible or estimate.market != "spot":
            continue
        hours, cost = estimate.expected_time_hours, estimate.expected_cost_usd
        if not (_finite(hours) and _finite(cost)):
            figures = time_and_cost(estimate, target)
            if figures is None:
                continue
            hours, cost = figures[0], figures[3]
        points.append((estimate, hours, cost))
    if not points:
        return None
    with_deadline = all(e.p_meet_deadline is not None for e, _, _ in points)
    ys = [e.p_meet_deadline if with_deadline else hours for e, hours, _ in points]
    text = [
        f"{html.escape(e.label)}<br>expected {hours:,.3g} h, ${cost:,.4g}"
        + (f"; P(deadline) {e.p_meet_deadline:.0%}" if e.p_meet_deadline is not None else "")
        + f"<br>interruptions: {html.escape(e.interruption_bucket or 'unknown')}"
        for e, hours, cost in points
    ]
    lowest = min((y for y in ys if y is not None), default=0.0)
    yaxis = (
        # Fitted to the points: a chance that never falls below 90% gets the whole height.
        {
            "title": {"text": "P(finish by the deadline)"},
            "range": [max(0.0, lowest - 0.05), 1.02],
            "tickformat": ".0%",
        }
        if with_deadline
        else {"title": {"text": "expected time (hours, log)"}, "type": "log"}
    )
    versus = "probability of meeting the deadline" if with_deadline else "expected time"
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "markers",
                "x": [cost for _, _, cost in points],
                "y": ys,
                "text": text,
                "hoverinfo": "text",
                "marker": {"color": MARKET_COLOURS["spot"], "size": 9},
            }
        ],
        "layout": {
            "title": {"text": f"Spot, with interruptions priced in: expected cost vs {versus}"},
            "xaxis": {
                "title": {"text": f"expected cost to {html.escape(target_text)} (USD, log)"},
                "type": "log",
            },
            "yaxis": yaxis,
            "height": 420,
            "font": FONT,
            "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
        },
    }
