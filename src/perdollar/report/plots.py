"""Plotly figures of a recommendation, as plain figure dicts (data + layout).

Every string that reaches a figure is HTML-escaped first: plotly renders labels as a subset
of HTML, so a model named ``<script>…`` must arrive as text, not markup.
"""

from __future__ import annotations

import html
import math
from typing import Any

from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation

REFERENCE_SAMPLES = 1e9  # when the question has no target, plots show time and cost per 1e9 samples
MARKET_COLOURS = {"on-demand": "#1f77b4", "spot": "#ff7f0e"}
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13}


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def target_samples(recommendation: Recommendation) -> tuple[float, str]:
    target = recommendation.question.target_samples
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


def time_cost_scatter(recommendation: Recommendation) -> dict[str, Any]:
    target, target_text = target_samples(recommendation)
    traces: list[dict[str, Any]] = []
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
                        "color": colour,
                    },
                    "error_y": {
                        "type": "data",
                        "symmetric": False,
                        "array": hi_y,
                        "arrayminus": lo_y,
                        "thickness": 1,
                        "width": 0,
                        "color": colour,
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
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Time vs cost to {html.escape(target_text)} — bars: prediction band"},
            "xaxis": {"title": {"text": "time to target (hours, log)"}, "type": "log"},
            "yaxis": {"title": {"text": "cost to target (USD, log)"}, "type": "log"},
            "hovermode": "closest",
            "height": 520,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.18},
            "margin": {"l": 70, "r": 20, "t": 50, "b": 90},
        },
    }


def samples_per_dollar_bars(recommendation: Recommendation) -> dict[str, Any]:
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
                "hovertemplate": "%{y}: %{x:,.4g} samples/$<br>%{text}<extra></extra>",
                "marker": {"color": [MARKET_COLOURS.get(e.market, "#888") for _, e in ranked]},
                "error_x": {
                    "type": "data",
                    "symmetric": False,
                    "array": high,
                    "arrayminus": low,
                    "thickness": 1,
                },
            }
        ],
        "layout": {
            "title": {"text": "Best samples per dollar per accelerator (blue on-demand, orange spot)"},
            "xaxis": {"title": {"text": "samples per US dollar"}},
            "height": max(260, 28 * len(ranked) + 120),
            "font": FONT,
            "margin": {"l": 160, "r": 20, "t": 50, "b": 50},
        },
    }


def spot_view(recommendation: Recommendation) -> dict[str, Any] | None:
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
    yaxis = (
        {"title": {"text": "P(finish by the deadline)"}, "range": [-0.05, 1.05], "tickformat": ".0%"}
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
