"""The cost-vs-carbon front of a recommendation: every feasible candidate that carries emissions,
its cost and CO₂e on two axes, and the candidates no other beats on both.

A training candidate is placed by its expected cost and kg CO₂e to the target (per sample when
the question has none); a language model's deployment by its $ and g CO₂e per million output
tokens. Candidates in a region the grid table does not list carry no carbon and are left out.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation
from perdollar.select.pareto import pareto_indices

FRONT_COLOUR = "#2ca02c"
POINT_COLOUR = "rgba(31,119,180,0.6)"
FONT = {"family": "system-ui, -apple-system, Segoe UI, sans-serif", "size": 13}


@dataclass(frozen=True, slots=True)
class CarbonPoint:
    label: str
    cost: float
    carbon: float


@dataclass(frozen=True, slots=True)
class CarbonFront:
    cost_unit: str
    carbon_unit: str
    points: tuple[CarbonPoint, ...]
    front: tuple[CarbonPoint, ...]  # lowest carbon first


def _positive(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


def _cost_and_carbon(estimate: Estimate) -> tuple[float | None, float | None]:
    figures = estimate.serving
    if figures is not None and figures.co2e_g_per_million_output_tokens is not None:
        return figures.usd_per_million_output_tokens, figures.co2e_g_per_million_output_tokens
    if estimate.carbon_kg is not None and estimate.expected_cost_usd is not None:
        return estimate.expected_cost_usd, estimate.carbon_kg
    return None, None


def cost_carbon_front(recommendation: Recommendation) -> CarbonFront | None:
    """The feasible candidates with both figures and their front; None when none carries carbon."""
    points = []
    for estimate in recommendation.estimates:
        cost, carbon = _cost_and_carbon(estimate)
        if estimate.feasible and _positive(cost) and _positive(carbon):
            points.append(CarbonPoint(estimate.label, float(cost or 0.0), float(carbon or 0.0)))
    if not points:
        return None
    front = pareto_indices([p.carbon for p in points], [p.cost for p in points])
    serving = any(e.serving is not None for e in recommendation.estimates)
    units = ("USD per million output tokens", "g CO2e per million output tokens") if serving else (
        "expected USD to target", "kg CO2e to target")  # fmt: skip
    return CarbonFront(units[0], units[1], tuple(points), tuple(points[i] for i in front))


def cost_carbon_scatter(front: CarbonFront) -> dict[str, object]:
    """The Plotly figure: every candidate, and the front as a stepped line."""

    def trace(points: tuple[CarbonPoint, ...], name: str, **style: object) -> dict[str, object]:
        return {
            "type": "scatter", "name": name, "x": [p.carbon for p in points], "y": [p.cost for p in points],
            "text": [html.escape(p.label) for p in points], "hoverinfo": "text+x+y", **style,
        }  # fmt: skip

    return {
        "data": [
            trace(front.points, "candidates", mode="markers", marker={"color": POINT_COLOUR, "size": 8}),
            trace(front.front, "front (cost vs carbon)", mode="lines+markers",
                  line={"color": FRONT_COLOUR, "width": 2, "shape": "hv"},
                  marker={"color": FRONT_COLOUR, "size": 10, "symbol": "diamond"}),
        ],
        "layout": {
            "title": {"text": "Cost vs carbon: the front is where less CO2e costs more"},
            "xaxis": {"title": {"text": f"{front.carbon_unit} (log)"}, "type": "log", "automargin": True},
            "yaxis": {"title": {"text": f"{front.cost_unit} (log)"}, "type": "log", "automargin": True},
            "hovermode": "closest", "height": 480, "autosize": True, "font": FONT,
            "legend": {"orientation": "h", "y": -0.2},
        },
    }  # fmt: skip


def carbon_section(recommendation: Recommendation, *, cost_heading: str = "cost", lead: str = "") -> str:
    """The cost-vs-carbon front and its points, where the candidates carry emissions ('' where not);
    ``lead``: markup shown first, under the heading."""
    from perdollar.report.page import escape, figure, table

    front = cost_carbon_front(recommendation)
    if front is None:
        return ""
    rows = [[escape(p.label), f"{p.carbon:.4g}", f"{p.cost:.4g}"] for p in front.front]
    return (
        "<h2>Cost vs carbon</h2>"
        + lead
        + figure("cost-carbon", cost_carbon_scatter(front), "")
        + f"<p class='note'>On the front, lowest emissions first ({escape(front.carbon_unit)}; "
        f"{escape(front.cost_unit)}):</p>"
        + table(["candidate", "CO2e", cost_heading], rows, numeric={1, 2}, table_id="cost-carbon-front")
    )
