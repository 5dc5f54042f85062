"""How ranked estimates look in a notebook: a pandas frame with units in the column names, a
few-line ``repr`` and a small escaped HTML table — never the whole dataclass dump."""

from __future__ import annotations

import html
from collections.abc import Sequence

import pandas as pd

from perdollar.fmt import format_band, format_hours, format_money, format_number
from perdollar.price.model import Estimate

HTML_ROWS = 10  # the notebook cell shows the head; .to_frame() holds every row


def estimates_frame(estimates: Sequence[Estimate], unit: str = "samples") -> pd.DataFrame:
    """One row per estimate in the order given, named by what each figure counts and in what unit."""
    rows = [
        {
            "rank": index + 1 if estimate.feasible else None,
            "configuration": estimate.label,
            "cloud": estimate.cloud,
            "region": estimate.region,
            "market": estimate.market,
            "nodes": estimate.nodes,
            "accelerator": estimate.accelerator,
            f"{unit}_per_second": estimate.samples_per_second,
            f"{unit}_per_second_low": estimate.samples_per_second_low,
            f"{unit}_per_second_high": estimate.samples_per_second_high,
            "basis": estimate.basis,
            "bottleneck": estimate.bottleneck,
            "price_usd_per_hour": estimate.price_per_hour,
            f"{unit}_per_usd": estimate.effective_samples_per_dollar or estimate.samples_per_dollar,
            "expected_time_hours": estimate.expected_time_hours,
            "expected_cost_usd": estimate.expected_cost_usd,
            "p_meet_deadline": estimate.p_meet_deadline,
            "plan": estimate.plan or None,
            "excluded_reason": estimate.excluded_reason or None,
        }
        for index, estimate in enumerate(estimates)
    ]
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["rank"] = frame["rank"].astype("Int64")
    return frame


def estimate_line(estimate: Estimate, unit: str) -> str:
    """``1x p5.48xlarge spot (aws us-east-1): 11,764 (9,800 … 13,900) images/s, $30.1/h``."""
    rate = format_band(
        estimate.samples_per_second,
        estimate.samples_per_second_low,
        estimate.samples_per_second_high,
        f"{unit}/s",
    )
    text = f"{estimate.label}: {rate} ({estimate.basis}), {format_money(estimate.price_per_hour)}/h"
    if estimate.expected_cost_usd is not None and estimate.expected_time_hours is not None:
        text += (
            f", {format_money(estimate.expected_cost_usd)} in {format_hours(estimate.expected_time_hours)}"
        )
    elif estimate.samples_per_dollar:
        text += f", {format_number(estimate.samples_per_dollar)} {unit}/$"
    return text


def estimates_html(frame: pd.DataFrame, title: str) -> str:
    """The head of ``frame`` as a small HTML table; every cell is escaped (names come from users)."""
    shown = frame.head(HTML_ROWS)
    header = "".join(f"<th>{html.escape(str(column))}</th>" for column in shown.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(value))}</td>" for value in row) + "</tr>"
        for row in shown.itertuples(index=False)
    )
    more = len(frame) - len(shown)
    footer = f"<p>… {more} more rows in .to_frame()</p>" if more > 0 else ""
    return (
        f"<div><strong>{html.escape(title)}</strong>"
        f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>{footer}</div>"
    )


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return format_number(value)
    return str(value)
