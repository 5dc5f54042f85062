"""A capacity block bills every hour it is booked: a job pays for the whole blocks its time needs.

The block's hours left over after the job are a line of the bill like egress: added to the cost to
the target and spread over its samples, so samples per dollar counts them too. Without a target
there is no job length to round, and the hourly rate stands.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perdollar.catalog.markets import HOURS_PER_DAY, capacity_block_days
from perdollar.price.frame import Target

BLOCK_MARKET = "capacity-block"
_TIME_AND_COST = (
    ("time_to_target_hours", "cost_to_target_usd", "price_per_hour"),
    ("expected_time_hours", "expected_cost_usd", "price_per_hour"),
    ("expected_time_hours_low", "expected_cost_usd_low", "price_per_hour_low"),
    ("expected_time_hours_high", "expected_cost_usd_high", "price_per_hour_high"),
)


def billed_in_whole_blocks(priced: pd.DataFrame, target: Target) -> pd.DataFrame:
    """``priced`` with each capacity-block row's costs billed for whole blocks; adds
    ``block_days`` (the days booked, NaN on other markets)."""
    out = priced.copy()
    block = out["market"].to_numpy(dtype=object) == BLOCK_MARKET
    out["block_days"] = np.nan
    if not block.any() or not target.samples:
        return out
    expected_days = capacity_block_days(out["expected_time_hours"].to_numpy(dtype=np.float64))
    out["block_days"] = np.where(block, expected_days, np.nan)
    idle_usd = np.zeros(len(out))
    for time_column, cost_column, price_column in _TIME_AND_COST:
        hours = out[time_column].to_numpy(dtype=np.float64)
        booked = capacity_block_days(hours) * HOURS_PER_DAY
        price = out[price_column].to_numpy(dtype=np.float64)
        extra = np.where(block & np.isfinite(booked), (booked - hours) * price, 0.0)
        out[cost_column] = out[cost_column].to_numpy(dtype=np.float64) + extra
        if cost_column == "expected_cost_usd":
            idle_usd = extra
    # Samples per dollar pays the booked hours the job leaves idle, as the bill's other lines do.
    per_sample = idle_usd / target.samples
    if "bill_usd_per_sample" in out:
        out["bill_usd_per_sample"] = out["bill_usd_per_sample"].to_numpy(dtype=np.float64) + per_sample
    with np.errstate(divide="ignore", invalid="ignore"):
        per_dollar = out["effective_samples_per_dollar"].to_numpy(dtype=np.float64)
        with_idle = 1.0 / (1.0 / per_dollar + per_sample)
        out["effective_samples_per_dollar"] = np.where(block, with_idle, per_dollar)
    return out
