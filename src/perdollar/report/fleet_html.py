"""A fleet over the day as a self-contained HTML page: replicas and cost per interval, drawn inline."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.files import why_not_writable, write_file_safely
from perdollar.report.html import GENERATOR_MARK, check_report_target

_WIDTH, _HEIGHT, _PAD = 640, 200, 40


def _steps(values: Sequence[float], top: float) -> str:
    """An SVG path drawing ``values`` as steps across the plot."""
    width = (_WIDTH - 2 * _PAD) / max(len(values), 1)
    points = []
    for index, value in enumerate(values):
        y = _HEIGHT - _PAD - (value / top if top > 0 else 0) * (_HEIGHT - 2 * _PAD)
        points += [f"{_PAD + index * width:.1f},{y:.1f}", f"{_PAD + (index + 1) * width:.1f},{y:.1f}"]
    return "M" + " L".join(points)


def step_plot(title: str, series: dict[str, Sequence[float]], labels: Sequence[str], unit: str) -> str:
    """Inline SVG of one or more step series sharing an axis (the first solid, the rest dashed)."""
    top = max((max(v) for v in series.values() if len(v)), default=1.0) * 1.1
    colours = ("#1f77b4", "#d62728", "#2ca02c")
    paths = []
    for index, (name, values) in enumerate(series.items()):
        dash = "" if index == 0 else ' stroke-dasharray="6 4"'
        paths.append(
            f'<path d="{_steps(values, top)}" fill="none" stroke="{colours[index % 3]}" '
            f'stroke-width="2"{dash}>'
            f"<title>{html.escape(name)}</title></path>"
        )
        paths.append(
            f'<text x="{_WIDTH - _PAD}" y="{16 + 14 * index}" text-anchor="end" font-size="11" '
            f'fill="{colours[index % 3]}">{html.escape(name)}</text>'
        )
    step = max(1, len(labels) // 8)
    width = (_WIDTH - 2 * _PAD) / max(len(labels), 1)
    ticks = [
        f'<text x="{_PAD + (i + 0.5) * width:.1f}" y="{_HEIGHT - _PAD + 14}" text-anchor="middle" '
        f'font-size="10">{html.escape(label)}</text>'
        for i, label in enumerate(labels)
        if i % step == 0
    ]
    axis = (
        f'<line x1="{_PAD}" y1="{_HEIGHT - _PAD}" x2="{_WIDTH - _PAD}" y2="{_HEIGHT - _PAD}" stroke="#444"/>'
        f'<text x="{_PAD}" y="{_PAD - 8}" font-size="11">{top / 1.1:.3g} {html.escape(unit)} (top)</text>'
    )
    return (
        f'<figure><figcaption>{html.escape(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{_WIDTH}" height="{_HEIGHT}" role="img">{axis}{"".join(paths)}{"".join(ticks)}</svg>'
        "</figure>"
    )


# The figures of a fleet's answer that its page draws and that asking it again compares, by part:
# the whole answer, each interval, and each of the three fleets. True: a number; False: a text.
ANSWER_FIGURES = {"slo": False, "saving_vs_static_peak": True, "replay_slo_met_share": True}
INTERVAL_FIGURES = {"start": False, "replicas": True, "static_peak_replicas": True, "usd_per_hour": True,
                    "static_peak_usd_per_hour": True}  # fmt: skip
FLEET_FIGURES = {"usd_per_month": True, "usd_per_million_output_tokens": True, "spot_share": True}
FLEETS = ("fleet", "autoscaled_single_type", "static_peak")


def check_fleet_figures(document: Mapping[str, Any]) -> None:
    """A one-line error naming the first figure the page or a comparison needs that is missing or
    is not what it should be (a stored fleet can be damaged by hand)."""
    _check_figures(document, ANSWER_FIGURES, "")
    intervals = document.get("intervals")
    if not isinstance(intervals, list) or not intervals:
        raise PerdollarError("the fleet's intervals are missing", _DAMAGED_FIX)
    for index, interval in enumerate(intervals):
        _check_figures(interval, INTERVAL_FIGURES, f"intervals[{index}].")
    for key in FLEETS:
        _check_figures(document.get(key), FLEET_FIGURES, f"{key}.")
        parts = document[key].get("parts")
        if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
            raise PerdollarError(f"the fleet's {key}.parts is not a list of machines", _DAMAGED_FIX)
    if not isinstance(document.get("notes"), list | tuple):
        raise PerdollarError("the fleet's notes are missing", _DAMAGED_FIX)


_DAMAGED_FIX = "ask the question afresh with perdollar recommend --load-curve/--trace"


def _check_figures(part: object, figures: Mapping[str, bool], where: str) -> None:
    if not isinstance(part, Mapping):
        raise PerdollarError(f"the fleet's {where.rstrip('.') or 'answer'} is missing", _DAMAGED_FIX)
    for name, numeric in figures.items():
        value = part.get(name)
        if value is None:
            raise PerdollarError(f"the fleet's {where}{name} is missing", _DAMAGED_FIX)
        number = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if numeric != number if numeric else not isinstance(value, str):
            shown = str(value)[:40]
            raise PerdollarError(
                f"the fleet's {where}{name} is {shown!r}, not {'a number' if numeric else 'a text'}",
                _DAMAGED_FIX,
            )


def render_fleet_report(document: dict[str, Any]) -> str:
    check_fleet_figures(document)
    rows = document["intervals"]
    labels = [r["start"] for r in rows]
    replicas = step_plot(
        "Replicas over the day",
        {"chosen fleet": [r["replicas"] for r in rows],
         "static peak": [r["static_peak_replicas"] for r in rows]},
        labels, "replicas",
    )  # fmt: skip
    cost = step_plot(
        "Cost over the day",
        {"chosen fleet": [r["usd_per_hour"] for r in rows],
         "static peak": [r["static_peak_usd_per_hour"] for r in rows]},
        labels, "USD/h",
    )  # fmt: skip
    summary = "".join(
        f"<li>{html.escape(name)}: ${document[key]['usd_per_month']:,.0f} a month, "
        f"${document[key]['usd_per_million_output_tokens']:.3g} per million output tokens, spot share "
        f"{document[key]['spot_share']:.0%}: {html.escape('; '.join(document[key]['parts']))}</li>"
        for key, name in (("fleet", "Chosen fleet"), ("autoscaled_single_type", "One type, autoscaled"),
                          ("static_peak", "Static peak"))
    )  # fmt: skip
    notes = "".join(f"<li>{html.escape(str(note))}</li>" for note in document["notes"])
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="generator" content="{GENERATOR_MARK}">'
        f"<title>perdollar report: fleet over the day</title></head><body>"
        f"<h1>Fleet over the day within {html.escape(document['slo'])}</h1><ul>{summary}</ul>"
        f"<p>Replay: the SLO met in {document['replay_slo_met_share']:.0%} of intervals.</p>"
        f"{replicas}{cost}<h2>Assumptions</h2><ul>{notes}</ul></body></html>"
    )


def write_fleet_report(document: dict[str, Any], path: str | Path) -> Path:
    target = Path(path)
    check_report_target(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_file_safely(target, render_fleet_report(document), overwrite=True, option="--report")
    except OSError as error:
        raise PerdollarError(
            f"cannot write the report to {target} ({why_not_writable(error)})",
            "give a path in a folder you can write to",
        ) from None
    return target
