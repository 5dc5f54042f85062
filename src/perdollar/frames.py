"""Seams between stages that hand over tables: each stage declares its columns once, the next checks them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> pd.DataFrame:
    """``frame`` unchanged, or a TypeError naming the columns a stage's declared output lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise TypeError(f"{what} lacks its declared columns {', '.join(missing)}")
    return frame


def row_keys(frame: pd.DataFrame, columns: Sequence[str]) -> list[tuple[str, ...]]:
    """Each row's values in ``columns`` as a tuple of strings.

    Iterating a categorical or string column element by element goes through pandas' extension
    array protocol, about 3 µs a value; over 100,000 priced rows that alone took most of a second.
    Converting each column to a NumPy object array first keeps it to a C-speed copy.
    """
    arrays = [frame[c].to_numpy(dtype=object) for c in columns]
    seen: dict[tuple[object, ...], tuple[str, ...]] = {}
    keys = []
    for values in zip(*arrays, strict=True):
        key = seen.get(values)
        if key is None:
            key = seen[values] = tuple(str(v) for v in values)
        keys.append(key)
    return keys
