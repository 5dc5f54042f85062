"""Plotly figures of a language model's deployments: cost against each latency, engines by format.

Every string that reaches a figure is HTML-escaped first, as in :mod:`perdollar.report.plots`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

from perdollar.price.model import Estimate, ServingFigures
from perdollar.report.plots import FONT, MARKET_COLOURS, TITLE_PLACE, log_ticks
from perdollar.select.pareto import pareto_indices

FRONT_COLOUR = "#2ca02c"
LIMIT_COLOUR = "#cf222e"
ENGINE_COLOURS = ("#1f77b4", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f")


@dataclass(frozen=True, slots=True)
class Latency:
    """One of the two latencies a deployment is held to: its name, its estimate field, its limit."""

    name: str  # "TTFT p99"
    field: str  # the ServingFigures attribute
    limit_ms: float | None


def figures_of(estimate: Estimate) -> ServingFigures:
    return estimate.serving or ServingFigures()


def per_million(usd: float | None) -> str:
    """A price per million tokens as the command line prints it."""
    return "—" if usd is None else f"${usd:.3g}"


def _finite(value: float | None) -> TypeGuard[float]:
    return value is not None and math.isfinite(value) and value > 0


def latency_of(estimate: Estimate, latency: Latency) -> float | None:
    figures = estimate.serving
    value = getattr(figures, latency.field, None) if figures is not None else None
    return float(value) if _finite(value) else None


def cost_of(estimate: Estimate) -> float | None:
    figures = estimate.serving
    value = figures.usd_per_million_output_tokens if figures is not None else None
    return float(value) if _finite(value) else None


def placed(deployments: Sequence[Estimate], latency: Latency) -> list[tuple[Estimate, float, float]]:
    """The deployments that have both this latency and a price per million output tokens."""
    return [
        (e, ms, usd)
        for e in deployments
        if (ms := latency_of(e, latency)) is not None and (usd := cost_of(e)) is not None
    ]


def latency_front(deployments: Sequence[Estimate], latency: Latency) -> list[Estimate]:
    """The deployments no other beats on both this latency and the price, fastest first."""
    points = placed(deployments, latency)
    return [points[i][0] for i in pareto_indices([p[1] for p in points], [p[2] for p in points])]


def hover(estimate: Estimate) -> str:
    figures = estimate.serving
    assert figures is not None
    return "<br>".join(
        [
            html.escape(estimate.label),
            html.escape(f"TP{figures.tensor_parallel} × {figures.precision} ({figures.engine})"),
            f"TTFT p99 {figures.ttft_p99_ms or 0:.3g} ms, TPOT p99 {figures.tpot_p99_ms or 0:.3g} ms",
            f"${figures.usd_per_million_output_tokens or 0:.3g} per million output tokens; "
            f"${estimate.price_per_hour:,.4g}/h",
        ]
    )


def cost_latency_scatter(
    deployments: Sequence[Estimate], latency: Latency, top: Estimate | None
) -> dict[str, object] | None:
    """Every deployment by this latency and its price, the front as a stepped line, the SLO limit
    as a dashed line; None when no deployment has both figures."""
    points = placed(deployments, latency)
    if not points:
        return None
    traces: list[dict[str, object]] = []
    for market, colour in MARKET_COLOURS.items():
        mine = [p for p in points if p[0].market == market]
        if mine:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": market,
                    "x": [p[1] for p in mine],
                    "y": [p[2] for p in mine],
                    "text": [hover(p[0]) for p in mine],
                    "hoverinfo": "text",
                    "marker": {"color": colour, "size": 8, "opacity": 0.75},
                }
            )
    front = latency_front(deployments, latency)
    traces.append(
        {
            "type": "scatter",
            "mode": "lines+markers",
            "name": f"front ({latency.name} vs cost)",
            "x": [latency_of(e, latency) for e in front],
            "y": [cost_of(e) for e in front],
            "text": [hover(e) for e in front],
            "hoverinfo": "text",
            "line": {"color": FRONT_COLOUR, "width": 2, "shape": "hv"},
            "marker": {"color": FRONT_COLOUR, "size": 10, "symbol": "diamond"},
        }
    )
    if top is not None and (ms := latency_of(top, latency)) is not None:
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "top choice",
                "x": [ms],
                "y": [cost_of(top)],
                "text": [hover(top)],
                "hoverinfo": "text",
                "marker": {
                    "color": "#d62728",
                    "size": 16,
                    "symbol": "star",
                    "line": {"color": "#000", "width": 1},
                },
            }
        )
    shapes, annotations = [], []
    widest = max(p[1] for p in points)
    if latency.limit_ms:
        widest = max(widest, latency.limit_ms)
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": latency.limit_ms,
                "x1": latency.limit_ms,
                "y0": 0,
                "y1": 1,
                "line": {"color": LIMIT_COLOUR, "width": 1.5, "dash": "dash"},
            }
        )
        annotations.append(
            {
                "x": latency.limit_ms,
                "xref": "x",
                "y": 1,
                "yref": "paper",
                "yanchor": "bottom",
                "xanchor": "right",
                "text": f"SLO ≤ {latency.limit_ms:g} ms",
                "showarrow": False,
                "font": {"color": LIMIT_COLOUR},
            }
        )
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Cost vs {latency.name}", **TITLE_PLACE},
            "xaxis": {
                "title": {"text": f"{latency.name} (ms)"},
                "range": [0, widest * 1.08],
                "ticksuffix": " ms",
                "automargin": True,
            },
            "yaxis": {
                "title": {"text": "USD per million output tokens (log)"},
                "type": "log",
                **log_ticks((min(p[2] for p in points), max(p[2] for p in points)), "${:g}"),
                "automargin": True,
            },
            "hovermode": "closest",
            "height": 440,
            "autosize": True,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 70, "r": 20, "t": 60, "b": 90},
            "shapes": shapes,
            "annotations": annotations,
        },
    }


def engine_format_bars(best: dict[tuple[str, str], float]) -> dict[str, object]:
    """The best price per million output tokens of each (engine, format): one bar group per format."""
    engines = sorted(
        {engine for engine, _ in best},
        key=lambda name: min(value for (e, _), value in best.items() if e == name),
    )
    formats = sorted({fmt for _, fmt in best})
    traces = [
        {
            "type": "bar",
            "name": html.escape(engine),
            "x": [html.escape(fmt) for fmt in formats if (engine, fmt) in best],
            "y": [best[(engine, fmt)] for fmt in formats if (engine, fmt) in best],
            "marker": {"color": ENGINE_COLOURS[index % len(ENGINE_COLOURS)]},
            "hovertemplate": f"{html.escape(engine)} in %{{x}}: $%{{y:.3g}} per million output tokens"
            "<extra></extra>",
        }
        for index, engine in enumerate(engines)
    ]
    return {
        "data": traces,
        "layout": {
            "title": {"text": "Best USD per million output tokens by engine and format", **TITLE_PLACE},
            "barmode": "group",
            "xaxis": {"title": {"text": "format of the weights"}},
            "yaxis": {
                "title": {"text": "USD per million output tokens"},
                "tickprefix": "$",
                "rangemode": "tozero",
            },
            "height": 360,
            "autosize": True,
            "font": FONT,
            "legend": {"orientation": "h", "y": -0.25},
            "margin": {"l": 70, "r": 20, "t": 50, "b": 80},
        },
    }
