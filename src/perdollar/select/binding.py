"""When nothing is feasible: which constraint binds, and by how much."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perdollar.errors import NothingFeasibleError
from perdollar.fmt import format_hours, format_money
from perdollar.price.frame import Target
from perdollar.select import constraints as cand
from perdollar.select.explain import describe

HARD = (
    cand.REASON_STACK,
    cand.REASON_FIT,
    cand.REASON_NO_PRICE,
    cand.REASON_NO_SPOT,
    cand.REASON_NO_THROUGHPUT,
)


def _round_up(value: float) -> float:
    """A friendly number at or above ``value`` (two significant figures)."""
    if not math.isfinite(value) or value <= 0:
        return value
    scale = 10 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(value / scale) * scale


def _shortfall(short: float) -> str:
    """``the deadline is about 40% too short`` or, far off, ``… would have to be 250× longer``."""
    if short < 1.0:
        return f"the deadline is about {short:.0%} too short"
    return f"the deadline would have to be about {1 + short:.0f}× longer"


def _largest_device_gib(priced: pd.DataFrame) -> float:
    if "accelerator_memory_gib_total" not in priced or "accelerator_count" not in priced:
        return float("nan")
    count = priced["accelerator_count"].to_numpy(dtype=np.float64)
    total = priced["accelerator_memory_gib_total"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_device = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)
    return float(np.nanmax(per_device)) if np.isfinite(per_device).any() else float("nan")


def nothing_feasible_error(
    priced: pd.DataFrame,
    target: Target,
    confidence: float,
    *,
    memory_needed_gib: float | None = None,
    size_limit: str = "--max-nodes",
) -> NothingFeasibleError:
    """The error to raise when every candidate is excluded; ``size_limit`` is the option that caps
    the candidates' size in this question (``--max-accelerators`` where the user gave a chip cap)."""
    reasons = priced["reason"].to_numpy()
    counts = pd.Series(reasons).value_counts()
    soft = ~np.isin(reasons, HARD)
    if not soft.any():
        if counts.get(cand.REASON_FIT, 0):
            largest = _largest_device_gib(priced)
            need = f"needs {memory_needed_gib:.1f} GiB per device" if memory_needed_gib else "does not fit"
            return NothingFeasibleError(
                f"the workload fits nowhere: it {need}; "
                f"the largest allowed accelerator has {largest:.0f} GiB "
                f"({counts.get(cand.REASON_FIT, 0):,} candidates too small, "
                f"{counts.get(cand.REASON_STACK, 0):,} on an unsupported software stack)",
                "lower --batch-size, use a lower --precision (amp-bf16), or allow more clouds/regions",
            )
        summary = ", ".join(f"{n:,} {code}" for code, n in counts.items())
        return NothingFeasibleError(
            f"every candidate is excluded ({summary})",
            "allow more clouds/regions/markets, or see --show-excluded",
        )

    rows = priced.loc[soft]
    if target.deadline_hours:
        meets = rows["p_meet_deadline"].to_numpy(dtype=np.float64) >= confidence
        if not meets.any():
            order = np.lexsort(
                (
                    rows["expected_time_hours"].to_numpy(dtype=np.float64),
                    -rows["p_meet_deadline"].fillna(0).to_numpy(dtype=np.float64),
                )
            )
            best = rows.iloc[order[0]]
            needed = float(best["expected_time_hours_high"])
            short = needed / target.deadline_hours - 1.0
            return NothingFeasibleError(
                f"no candidate finishes by {format_hours(target.deadline_hours)} with P ≥ {confidence:.2f}: "
                f"the best, {describe(best)}, "
                f"is expected to take {format_hours(best['expected_time_hours'])} "
                f"(P = {best['p_meet_deadline']:.2f}); {_shortfall(short)}",
                f"give --deadline {_round_up(needed):g}h or more, raise {size_limit}, or lower --confidence",
            )
        rows = rows.loc[meets]
    cheapest = rows.iloc[int(np.nanargmin(rows["expected_cost_usd"].to_numpy(dtype=np.float64)))]
    needed_cost = float(cheapest["expected_cost_usd"])
    over = needed_cost - float(target.budget_usd or 0.0)
    scope = " that meets the deadline" if target.deadline_hours else ""
    return NothingFeasibleError(
        f"the budget of {format_money(target.budget_usd)} is too small: the cheapest candidate{scope}, "
        f"{describe(cheapest)}, is expected to cost {format_money(needed_cost)} "
        f"({format_money(over)} or {over / float(target.budget_usd or 1):.0%} over)",
        f"give --budget {_round_up(needed_cost):.0f} or more"
        + (", or loosen --deadline" if target.deadline_hours else ", or lower --samples"),
    )
