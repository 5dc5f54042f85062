"""The user's utility: a score per candidate (lower is better), its band, ranking and ties."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.vocabulary import TRAINING_OBJECTIVES

OBJECTIVES = TRAINING_OBJECTIVES
# Two candidates on the same accelerator share their prediction error, so their bands say
# nothing about which is better: only the central values count, and closer than this is a tie.
SAME_CHIP_TIE_FRACTION = 0.02


@dataclass(frozen=True, slots=True)
class Scores:
    value: np.ndarray
    low: np.ndarray  # optimistic end of the band
    high: np.ndarray  # pessimistic end
    unit: str  # what the score is, for explanations


def parse_weights(text: str | None) -> dict[str, float]:
    """``time=1,cost=2`` → {"time": 1/3, "cost": 2/3} (normalised to sum to one)."""
    if not text:
        return {"time": 0.5, "cost": 0.5}
    weights: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip().lower()
        if name not in ("time", "cost") or not value.strip():
            raise PerdollarError(
                f"--weights {text!r} is not understood",
                "write it like time=1,cost=2 (the keys are time and cost)",
            )
        try:
            weights[name] = float(value)
        except ValueError:
            raise PerdollarError(
                f"--weights {text!r}: {value!r} is not a number", "write it like time=1,cost=2"
            ) from None
    total = sum(weights.values())
    if total <= 0 or any(w < 0 for w in weights.values()):
        raise PerdollarError(
            f"--weights {text!r} must be non-negative and not all zero", "write it like time=1,cost=2"
        )
    return {"time": weights.get("time", 0.0) / total, "cost": weights.get("cost", 0.0) / total}


def _time_and_cost(
    frame: pd.DataFrame, has_target: bool
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """(value, low, high) of time and of cost; per sample when there is no target."""
    if has_target:
        time = tuple(
            frame[c].to_numpy(dtype=np.float64)
            for c in ("expected_time_hours", "expected_time_hours_low", "expected_time_hours_high")
        )
        cost = tuple(
            frame[c].to_numpy(dtype=np.float64)
            for c in ("expected_cost_usd", "expected_cost_usd_low", "expected_cost_usd_high")
        )
        return time, cost
    price = frame["price_per_hour"].to_numpy(dtype=np.float64)
    # The optimistic end pays the low price, the pessimistic one the high (spot zones, a price's age).
    prices = [
        frame[c].to_numpy(dtype=np.float64) if c in frame else price
        for c in ("price_per_hour", "price_per_hour_low", "price_per_hour_high")
    ]
    rates = [
        frame[c].to_numpy(dtype=np.float64)
        for c in (
            "effective_samples_per_second",
            "effective_samples_per_second_high",
            "effective_samples_per_second_low",
        )
    ]
    with np.errstate(divide="ignore"):
        hours_per_sample = tuple(
            np.where(r > 0, 1.0 / (3600.0 * np.where(r > 0, r, 1.0)), np.inf) for r in rates
        )
    # The bill's other lines (egress, storage) spread over the target's samples, where priced.
    extra = frame["bill_usd_per_sample"].to_numpy(dtype=np.float64) if "bill_usd_per_sample" in frame else 0.0
    dollars_per_sample = tuple(h * p + extra for h, p in zip(hours_per_sample, prices, strict=True))
    return hours_per_sample, dollars_per_sample


def scores(
    frame: pd.DataFrame,
    objective: str,
    *,
    has_target: bool,
    weights: dict[str, float] | None = None,
    feasible: np.ndarray | None = None,
) -> Scores:
    """Score every row for ``objective``; ``feasible`` sets the reference for weighted scores."""
    time, cost = _time_and_cost(frame, has_target)
    if objective == "samples-per-dollar":
        # Dollars per sample after spot losses: the same ranking with or without a target.
        per_sample = _time_and_cost(frame, False)[1]
        return Scores(per_sample[0], per_sample[1], per_sample[2], "USD per sample")
    if objective == "cost":
        return Scores(cost[0], cost[1], cost[2], "USD to target" if has_target else "USD per sample")
    if objective == "time":
        return Scores(time[0], time[1], time[2], "hours to target" if has_target else "hours per sample")
    if objective == "carbon":
        column = "carbon_kg" if has_target else "carbon_kg_per_sample"
        carbon = frame[column].to_numpy(dtype=np.float64) if column in frame else np.full(len(frame), np.nan)
        unit = "kg CO2e to target" if has_target else "kg CO2e per sample"
        return Scores(carbon, carbon, carbon, unit)
    if objective == "weighted":
        weights = weights or {"time": 0.5, "cost": 0.5}
        reference = feasible if feasible is not None and feasible.any() else np.ones(len(frame), dtype=bool)
        best_time = np.nanmin(np.where(reference, time[0], np.inf)) if len(frame) else 1.0
        best_cost = np.nanmin(np.where(reference, cost[0], np.inf)) if len(frame) else 1.0
        best_time = best_time if np.isfinite(best_time) and best_time > 0 else 1.0
        best_cost = best_cost if np.isfinite(best_cost) and best_cost > 0 else 1.0
        combined = [
            weights["time"] * t / best_time + weights["cost"] * c / best_cost
            for t, c in zip(time, cost, strict=True)
        ]
        return Scores(combined[0], combined[1], combined[2], "weighted (1 = best on both)")
    raise PerdollarError(f"unknown objective {objective!r}", f"choose one of {', '.join(OBJECTIVES)}")


def rank_order(score: np.ndarray, feasible: np.ndarray, tiebreak: np.ndarray) -> np.ndarray:
    """Row order: feasible by score (then ``tiebreak``, e.g. price), then the excluded ones."""
    safe = np.where(np.isfinite(score), score, np.inf)
    return np.lexsort((tiebreak, safe, ~feasible))


def near_ties(frame: pd.DataFrame, value: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Rows (of a ranked, feasible frame) that tie with row 0 within the prediction bands."""
    if len(frame) < 2:
        return np.zeros(len(frame), dtype=bool)
    chip = frame["accelerator_key"].fillna("cpu").to_numpy(dtype=object)
    same_chip = chip == chip[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        close = np.abs(value - value[0]) <= SAME_CHIP_TIE_FRACTION * np.abs(value[0])
    overlap = low <= high[0]
    ties = np.where(same_chip, close, overlap)
    ties[0] = False
    return ties
