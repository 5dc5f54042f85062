"""Price a whole table of candidates at once: cost, spot expectations and P(deadline).

The input is one row per candidate (offer × node count) with its predicted throughput; the
output adds every priced column of :class:`~perdollar.price.model.Estimate`. Everything is
column arithmetic: pricing 10⁵ candidates takes milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.goals import trained
from perdollar.price import cost, spot
from perdollar.price.spot_prices import price_band
from perdollar.question import Question, SpotSettings

# The prediction band (low … high) is the 10th–90th percentile of the predictor's observed
# log errors: read as a central 80 % interval of a lognormal, ±1.2816 σ.
BAND_Z = 1.2816


# What :func:`price_frame` adds to a candidate table: the price stage's declared output.
PRICED_COLUMNS = (
    "price_per_hour",
    "price_per_hour_low",
    "price_per_hour_high",
    "samples_per_dollar",
    "interruptions_per_hour",
    "checkpoint_interval_hours",
    "spot_overhead",
    "effective_samples_per_second",
    "effective_samples_per_second_low",
    "effective_samples_per_second_high",
    "effective_samples_per_dollar",
    "time_to_target_hours",
    "cost_to_target_usd",
    "expected_time_hours",
    "expected_time_hours_low",
    "expected_time_hours_high",
    "expected_cost_usd",
    "expected_cost_usd_low",
    "expected_cost_usd_high",
    "p_meet_deadline",
)


@dataclass(frozen=True, slots=True)
class SpotAssumptions:
    """What the spot model needs beyond the catalog; each one can be overridden by the user."""

    checkpoint_hours: float = spot.checkpoint_hours(0.0)
    restart_hours: float = spot.DEFAULT_RESTART_HOURS
    # Monthly interruption fraction applied to every spot offer (None: the catalog's bucket).
    interruption_fraction: float | None = None
    unknown_fraction: tuple[float, float, float] = spot.UNKNOWN_MONTHLY_FRACTION


@dataclass(frozen=True, slots=True)
class Target:
    """How much work, by when, for how much (all optional)."""

    samples: float | None = None
    deadline_hours: float | None = None
    budget_usd: float | None = None


def target_of(question: Question) -> Target:
    """A training run's target; a deployment or a fleet has none."""
    goal = trained(question.goal)
    if goal is None:
        return Target()
    return Target(samples=goal.target_samples, deadline_hours=goal.deadline_hours, budget_usd=goal.budget_usd)


def assumptions_for(settings: SpotSettings, state_bytes: float) -> SpotAssumptions:
    """The spot model's assumptions: the user's overrides, else defaults (checkpoint from the state size)."""
    base = SpotAssumptions()
    return SpotAssumptions(
        checkpoint_hours=(
            settings.checkpoint_seconds / 3600.0
            if settings.checkpoint_seconds is not None
            else spot.checkpoint_hours(state_bytes)
        ),
        restart_hours=(
            settings.restart_minutes / 60.0 if settings.restart_minutes is not None else base.restart_hours
        ),
        interruption_fraction=settings.interruption_rate,
    )


def throughput_log_sd(low: np.ndarray, central: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Log-scale standard deviation of the *slow* side of an 80 % band (0 when it is empty).

    Whether a deadline is met depends on how slow the run may be, so the low end of the band
    sets the spread; bands are often asymmetric. Without a low end, the high end stands in.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        slow = np.log(central / low)
        fast = np.log(high / central)
    width = np.where(
        np.isfinite(slow) & (slow > 0), slow, np.where(np.isfinite(fast) & (fast > 0), fast, 0.0)
    )
    return width / BAND_Z


def interruption_hazard(frame: pd.DataFrame, assumptions: SpotAssumptions) -> np.ndarray:
    """Per-node hourly hazard of each row: 0 on-demand, the bucket's (or the override's) on spot."""
    if assumptions.interruption_fraction is not None:
        fraction = np.full(len(frame), assumptions.interruption_fraction)
    else:
        buckets = frame["interruption_bucket"].to_numpy(dtype=object)
        fraction, _, _ = spot.bucket_fractions(buckets, assumptions.unknown_fraction)
    hazard = spot.monthly_fraction_to_hazard(fraction)
    return np.where(frame["market"].to_numpy() == "spot", hazard, 0.0)


def price_frame(frame: pd.DataFrame, target: Target, assumptions: SpotAssumptions) -> pd.DataFrame:
    """Add priced columns to ``frame``.

    Needs ``market``, ``nodes``, ``price_per_node_hour``, ``interruption_bucket`` and
    ``samples_per_second`` (+ ``_low``/``_high``). Adds ``price_per_hour`` (all nodes),
    ``samples_per_dollar``, ``time_to_target_hours``, ``cost_to_target_usd``,
    ``interruptions_per_hour`` (all nodes), ``checkpoint_interval_hours``, ``spot_overhead``,
    ``effective_samples_per_second``, ``effective_samples_per_dollar``, ``expected_time_hours``,
    ``expected_cost_usd``, ``p_meet_deadline`` and the band of the expected time and cost.
    """
    out = frame.copy()
    nodes = out["nodes"].to_numpy(dtype=np.float64)
    rate = out["samples_per_second"].to_numpy(dtype=np.float64)
    rate_low = out["samples_per_second_low"].to_numpy(dtype=np.float64)
    rate_high = out["samples_per_second_high"].to_numpy(dtype=np.float64)
    price = cost.total_price_per_hour(out["price_per_node_hour"].to_numpy(dtype=np.float64), nodes)
    out["price_per_hour"] = price
    price_low, price_high = (
        cost.total_price_per_hour(side, nodes)
        for side in price_band(
            out["market"].to_numpy(dtype=object),
            out["price_per_node_hour"].to_numpy(dtype=np.float64),
            _column(out, "price_min_per_node_hour"),
            _column(out, "price_max_per_node_hour"),
            _column(out, "price_age_days", 0.0),
        )
    )
    out["price_per_hour_low"], out["price_per_hour_high"] = price_low, price_high
    out["samples_per_dollar"] = cost.samples_per_dollar(rate, price)

    hazard = interruption_hazard(out, assumptions)
    work = cost.hours_to_target(target.samples, rate) if target.samples else np.full(len(out), np.inf)
    outcome = spot.spot_outcome(work, hazard, nodes, assumptions.checkpoint_hours, assumptions.restart_hours)
    overhead = outcome.overhead
    out["interruptions_per_hour"] = outcome.job_hazard_per_hour
    out["checkpoint_interval_hours"] = np.where(hazard > 0, outcome.interval_hours, np.nan)
    out["checkpoint_young_daly_hours"] = np.where(hazard > 0, outcome.young_daly_hours, np.nan)
    out["checkpoint_final_only"] = outcome.final_checkpoint_only
    out["lost_work_per_interruption_hours"] = np.where(hazard > 0, outcome.lost_work_hours, np.nan)
    out["spot_overhead"] = overhead
    with np.errstate(divide="ignore", invalid="ignore"):
        out["effective_samples_per_second"] = rate / overhead
        out["effective_samples_per_dollar"] = out["samples_per_dollar"].to_numpy() / overhead
        # Bands of the effective rate: the throughput band, with the spot overhead at the centre.
        out["effective_samples_per_second_low"] = rate_low / overhead
        out["effective_samples_per_second_high"] = rate_high / overhead

    if target.samples:
        out["time_to_target_hours"] = work
        out["cost_to_target_usd"] = cost.cost_of_hours(work, price)
        out["expected_time_hours"] = outcome.expected_hours
        out["expected_cost_usd"] = cost.cost_of_hours(outcome.expected_hours, price)
        with np.errstate(divide="ignore", invalid="ignore"):
            # The band of the expected time: the throughput band scales the work.
            out["expected_time_hours_low"] = (
                outcome.expected_hours * rate / np.where(rate_high > 0, rate_high, rate)
            )
            out["expected_time_hours_high"] = (
                outcome.expected_hours * rate / np.where(rate_low > 0, rate_low, rate)
            )
        # … and the price's band (the zones it may land in, its age) the dollars.
        out["expected_cost_usd_low"] = out["expected_time_hours_low"] * price_low
        out["expected_cost_usd_high"] = out["expected_time_hours_high"] * price_high
    else:
        for column in (
            "time_to_target_hours",
            "cost_to_target_usd",
            "expected_time_hours",
            "expected_cost_usd",
            "expected_time_hours_low",
            "expected_time_hours_high",
            "expected_cost_usd_low",
            "expected_cost_usd_high",
        ):
            out[column] = np.nan

    if target.samples and target.deadline_hours:
        log_sd = throughput_log_sd(rate_low, rate, rate_high)
        out["p_meet_deadline"] = spot.deadline_probability(outcome, target.deadline_hours, log_sd)
    else:
        out["p_meet_deadline"] = np.nan
    return out


def _column(frame: pd.DataFrame, name: str, missing: float = math.nan) -> np.ndarray:
    if name not in frame:
        return np.full(len(frame), missing)
    return frame[name].to_numpy(dtype=np.float64)


def describe_assumptions(assumptions: SpotAssumptions) -> str:
    """One line saying which spot assumptions priced the table."""
    rate = (
        f"{assumptions.interruption_fraction:.0%}/month on every spot offer (override)"
        if assumptions.interruption_fraction is not None
        else f"AWS Spot Advisor buckets; GCP/Azure {assumptions.unknown_fraction[0]:.0%}/month "
        f"(band {assumptions.unknown_fraction[1]:.0%}–{assumptions.unknown_fraction[2]:.0%}, unpublished)"
    )
    return (
        f"spot: interruptions {rate}; checkpoint {assumptions.checkpoint_hours * 3600:.0f} s, "
        f"restart {assumptions.restart_hours * 60:.0f} min, Young/Daly interval √(2·C·MTBF)"
    )


def monthly_fraction_from_text(text: str) -> float:
    """``15%``, ``0.15`` → 0.15 (a monthly interruption fraction)."""
    stripped = text.strip().removesuffix("/month").strip()
    value = float(stripped.rstrip("%")) / 100.0 if stripped.endswith("%") else float(stripped)
    if not 0.0 <= value < 1.0 or math.isnan(value):
        raise ValueError(text)
    return value
