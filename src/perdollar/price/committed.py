"""What a committed-use term costs over the months the capacity is needed, and when it pays.

The rule: a term bills its hourly rate for every hour of the term, used or not. Over a horizon
of H hours a term of T hours costs ``rate × max(T, H)``: a horizon shorter than the term still
pays the whole term; a longer one renews it. Spread over the horizon that is an effective hourly
rate of ``rate × max(T, H) / H``, which is what candidates are priced and ranked at, so a term
wins only where the horizon makes it cheapest. Without a horizon the capacity is taken to be
needed for the whole term (effective rate = the term's rate).

Break-even utilisation: the share of the horizon's hours the machine must be busy for the term to
cost no more than paying on-demand (or spot) for just those hours: effective rate ÷ on-demand rate
(÷ spot rate). Above 1 the term cannot pay at that horizon.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

HOURS_PER_MONTH = 730.0
HOURS_PER_YEAR = 8760.0


def effective_hourly(rate: float, term_years: float, horizon_months: float | None) -> float:
    """The term's bill over the horizon, per hour of the horizon."""
    if horizon_months is None:
        return rate
    horizon = horizon_months * HOURS_PER_MONTH
    if horizon <= 0:
        return math.inf
    return rate * max(term_years * HOURS_PER_YEAR, horizon) / horizon


def break_even_utilisation(effective_rate: float, alternative_rate: float) -> float:
    """Busy share of the horizon at which the term and the alternative cost the same (NaN if unknown)."""
    if not (alternative_rate > 0) or not math.isfinite(effective_rate):
        return math.nan
    return effective_rate / alternative_rate


def bill_over_horizon(offers: pd.DataFrame, horizon_months: float | None) -> pd.DataFrame:
    """Committed offers priced at their effective hourly rate over the horizon; the rest unchanged.

    Adds ``committed_rate_per_hour``: the term's own rate (NaN on other markets).
    """
    out = offers.copy()
    committed = out["market"].astype(str).str.startswith("committed-").to_numpy(dtype=bool)
    rate = out["price_per_hour"].to_numpy(dtype=float)
    years = out["term_years"].to_numpy(dtype=float) if "term_years" in out else np.full(len(out), np.nan)
    out["committed_rate_per_hour"] = np.where(committed, rate, np.nan)
    out["price_per_hour"] = [
        effective_hourly(r, y, horizon_months) if c else r
        for r, y, c in zip(rate, years, committed, strict=True)
    ]
    return out


def horizon_note(horizon_months: float | None) -> str:
    if horizon_months is None:
        return (
            "committed terms: billed every hour of the term, taken to be needed for the whole term "
            "(--horizon MONTHS prices a shorter or longer need)"
        )
    return (
        f"committed terms over a {horizon_months:g}-month horizon: a term bills every hour of its length, "
        "so each is priced at its rate × max(term, horizon) / horizon"
    )


def market_comparison(bills: pd.DataFrame, machines_label: str) -> str:
    """One line: the same deployment's bill in every market, with each term's break-even.

    ``bills`` has one row per market: ``market`` and ``usd_per_hour`` (the whole deployment's
    effective bill, spot spares included).
    """
    by_market = {str(m): float(p) for m, p in zip(bills["market"], bills["usd_per_hour"], strict=True)}
    if not any(m.startswith("committed-") for m in by_market):
        return ""
    parts = []
    for market in ("on-demand", "spot", "committed-1y", "committed-3y"):
        if market not in by_market:
            continue
        bill = by_market[market]
        text = f"{market} ${bill:,.2f}/h"
        if market.startswith("committed-"):
            versus = [
                _pays_off(break_even_utilisation(bill, by_market[other]), other)
                for other in ("on-demand", "spot")
                if other in by_market
            ]
            if versus:
                text += f" (break-even: {'; '.join(versus)})"
        parts.append(text)
    return f"markets for {machines_label}: " + "; ".join(parts)


def _pays_off(share: float, other: str) -> str:
    if not math.isfinite(share):
        return f"unknown vs {other}"
    if share <= 1:
        return f"busy ≥{share:.0%} of the horizon vs {other}"
    return f"never pays vs {other} ({share:.0%})"
