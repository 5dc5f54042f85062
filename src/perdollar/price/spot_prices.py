"""How far the price a job pays can be from the price it is ranked at: zones and age.

A spot offer is ranked at its typical zone's price; the job may land in any of its zones
(lowest … highest), and a price read long before the rest of the snapshot has drifted since. The
drift is sized from the snapshot's own data: the AWS Spot Advisor's savings (the month to
2025-06-28) against the zones' spot prices read 2025-11-30, over the 794 GPU types and regions in
both, moved by at most ×1.63 (|log| 0.49) for 80 % of them in those 170 days
(``benchmarks/spot_price_drift.py`` prints it). Spot prices wander without a trend (median log
change +0.01), so the band grows as the square root of the age. On-demand list prices are taken as
they are: they change by announcements, not by the hour.
"""

from __future__ import annotations

import numpy as np

from perdollar.price.model import Estimate

SPOT_DRIFT_LOG80 = 0.49  # |log change| that 80 % of spot prices stayed within …
SPOT_DRIFT_SPAN_DAYS = 170.0  # … over this many days


def drift_factor(age_days: np.ndarray | float) -> np.ndarray:
    """The multiplicative 80 % half-width of a spot price read ``age_days`` before the snapshot."""
    age = np.clip(np.nan_to_num(np.asarray(age_days, dtype=np.float64), nan=0.0), 0.0, None)
    return np.exp(SPOT_DRIFT_LOG80 * np.sqrt(age / SPOT_DRIFT_SPAN_DAYS))


def price_band(
    market: np.ndarray,
    price: np.ndarray,
    lowest_zone: np.ndarray,
    highest_zone: np.ndarray,
    age_days: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of each row's price: spot over its zones, widened by its age; on demand as listed."""
    spot = market == "spot"
    low = np.where(np.isfinite(lowest_zone) & (lowest_zone < price), lowest_zone, price)
    high = np.where(np.isfinite(highest_zone) & (highest_zone > price), highest_zone, price)
    factor = drift_factor(age_days)
    return np.where(spot, low / factor, price), np.where(spot, high * factor, price)


def spot_band_sentence(estimate: Estimate) -> str:
    """What a spot top choice may really cost per hour, and why; "" on demand or without a band."""
    low, high = estimate.price_per_hour_low, estimate.price_per_hour_high
    if estimate.market != "spot" or low is None or high is None or high <= low * 1.005:
        return ""
    return (
        f"Its spot price, ${estimate.price_per_hour:,.2f}/h at a typical zone, may be "
        f"${low:,.2f}–${high:,.2f}/h where the job lands (its zones' spread and the price's age), "
        "and the cost band counts that."
    )
