"""A language model's deployments within each other's bands: what the cost ranking cannot tell apart.

Each deployment's cost per output token carries the band of its throughput (held-out errors of
predictions like it, ``predict/llm_serving/bands.py``). Two deployments on different chips whose
cost bands overlap tie: their order is not reliable. Two on the same chip and engine share their
prediction error, so only their central costs count, as for training candidates (``near_ties``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import SupportsFloat, TypedDict

import numpy as np
import pandas as pd

from perdollar.predict.llm_serving.bands import cost_band
from perdollar.price.model import Estimate
from perdollar.select.objectives import near_ties

COST = "usd_per_million_output_tokens"


def with_cost_band(frame: pd.DataFrame) -> pd.DataFrame:
    """The priced deployments with the band of their cost per output token (where they have one)."""
    if "throughput_band_low" not in frame.columns or frame.empty:
        return frame
    usd = pd.to_numeric(frame[COST], errors="coerce")
    low, high = cost_band(
        usd, frame["throughput_band_low"].astype(float), frame["throughput_band_high"].astype(float)
    )
    return frame.assign(**{f"{COST}_low": low, f"{COST}_high": high})


def _number(value: object) -> float | None:
    if not isinstance(value, SupportsFloat | str):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


class BandFigures(TypedDict):
    """The bands of a deployment's figures, as :class:`ServingFigures` takes them."""

    usd_per_million_output_tokens_low: float | None  # COST's band
    usd_per_million_output_tokens_high: float | None
    ttft_p99_ms_low: float | None
    ttft_p99_ms_high: float | None
    tpot_p99_ms_low: float | None
    tpot_p99_ms_high: float | None
    band_group: str | None
    band_rows: int | None


def band_figures(row: Mapping[str, object]) -> BandFigures:
    """A deployment's bands for its ServingFigures (None where the row has none)."""
    group = row.get("band_group")
    rows = _number(row.get("band_rows"))
    return {
        "usd_per_million_output_tokens_low": _number(row.get(f"{COST}_low")),
        "usd_per_million_output_tokens_high": _number(row.get(f"{COST}_high")),
        "ttft_p99_ms_low": _number(row.get("ttft_p99_ms_low")),
        "ttft_p99_ms_high": _number(row.get("ttft_p99_ms_high")),
        "tpot_p99_ms_low": _number(row.get("tpot_p99_ms_low")),
        "tpot_p99_ms_high": _number(row.get("tpot_p99_ms_high")),
        "band_group": group if isinstance(group, str) and group else None,
        "band_rows": int(rows) if rows is not None else None,
    }


def cost_ties(estimates: Sequence[Estimate]) -> tuple[int, ...]:
    """Indices of the feasible deployments (in rank order) that tie with the top one within their
    cost bands; none where the deployments carry no band."""
    feasible = [i for i, e in enumerate(estimates) if e.feasible and e.serving is not None]
    if len(feasible) < 2:
        return ()
    figures = [estimates[i].serving for i in feasible]
    cost = np.array([f.usd_per_million_output_tokens if f else math.nan for f in figures], dtype=float)
    low = np.array([f.usd_per_million_output_tokens_low if f else None for f in figures], dtype=float)
    high = np.array([f.usd_per_million_output_tokens_high if f else None for f in figures], dtype=float)
    if not np.isfinite(low[0]) or not np.isfinite(high[0]):
        return ()
    # A chip with its engine is what shares an error: two engines on one chip are judged by bands.
    chips = [
        f"{estimates[i].accelerator} {f.engine if f else ''}" for i, f in zip(feasible, figures, strict=True)
    ]
    tied = near_ties(pd.DataFrame({"accelerator_key": chips}), cost, low, high)
    return tuple(feasible[j] for j in np.flatnonzero(tied))


def ties_sentence(estimates: Sequence[Estimate], ties: Sequence[int]) -> str:
    """The sentence the explanation adds when deployments tie with the top one ('' when none does)."""
    if not ties:
        return ""
    top = next(e for e in estimates if e.feasible)
    runner = estimates[ties[0]]
    figures = top.serving
    band = f"{figures.band_group}" if figures and figures.band_group else "the prediction bands"
    return (
        f"\n{len(ties)} deployment(s) tie with it within the 80% bands of cost per output token "
        f"(the top one's: {band}), first {runner.label}: the order among ties is not reliable; "
        f"measure them before committing (perdollar serve-bench)."
    )
