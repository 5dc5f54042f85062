"""The offers a question allows: clouds, region patterns (``us-*``) and market."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd


def _matches_any(values: pd.Series, patterns: Sequence[str]) -> np.ndarray:
    """Case-insensitive match of each value against shell-style patterns (``us-*``)."""
    regex = "|".join(fnmatch.translate(p.lower()) for p in patterns)
    return values.str.lower().str.match(re.compile(regex)).to_numpy(dtype=bool)


def allowed_offers(
    offers: pd.DataFrame,
    *,
    clouds: Sequence[str] = (),
    regions: Sequence[str] = (),
    market: str = "any",
    priced_only: bool = False,
) -> pd.DataFrame:
    """Rows of :meth:`Catalog.offers_frame` in the allowed clouds, regions and market."""
    keep = np.ones(len(offers), dtype=bool)
    if clouds:
        keep &= offers["cloud"].str.lower().isin([c.lower() for c in clouds]).to_numpy()
    if regions:
        keep &= _matches_any(offers["region"].astype(str), regions)
    names = {m.strip() for m in market.split(",")}  # "on-demand,committed": either market
    if "any" not in names:
        markets = offers["market"].astype(str)
        chosen = markets.isin(names).to_numpy(dtype=bool, copy=True)
        if "committed" in names:  # both terms
            chosen |= markets.str.startswith("committed-").to_numpy(dtype=bool)
        keep &= chosen
    if priced_only:
        keep &= (offers["price_per_hour"] > 0).to_numpy()
    return offers.loc[keep]
