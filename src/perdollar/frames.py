"""Seams between stages that hand over tables: each stage declares its columns once, the next checks them."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> pd.DataFrame:
    """``frame`` unchanged, or a TypeError naming the columns a stage's declared output lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TypeError(f"{what} lacks its declared columns {', '.join(missing)}")
    return frame
