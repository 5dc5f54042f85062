"""Seams between stages that hand over tables: each stage declares its columns once, the next checks them."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import TypeVar

import numpy as np
import pandas as pd

T = TypeVar("T")


def map_distinct(values: pd.Series, decide: Callable[[Hashable], T]) -> list[T]:
    """``decide`` of each value, called once per distinct value (a list is read as its tuple).

    Priced frames repeat a handful of flag tuples or clouds over a hundred thousand rows; a
    per-row ``map`` of a Python function spent most of a second on them.
    """
    array = values.to_numpy(dtype=object)
    try:
        codes, _ = pd.factorize(array, use_na_sentinel=False)
    except TypeError:  # unhashable values (lists of flags): their tuples are the keys
        keys = [tuple(v) if isinstance(v, list) else v for v in array]
        decided = {key: decide(key) for key in set(keys)}
        return [decided[key] for key in keys]
    # Each distinct value as the rows hold it (factorising reads a None as NaN).
    _, first_rows = np.unique(codes, return_index=True)
    by_code = np.empty(len(first_rows), dtype=object)
    for code, row in enumerate(first_rows):  # element by element: a decided tuple stays one value
        by_code[code] = decide(array[row])
    return by_code[codes].tolist()


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
    Factorising each column instead leaves one Python step per distinct key.
    """
    if len(frame) == 0:
        return []
    factorised = [pd.factorize(frame[c], use_na_sentinel=False) for c in columns]
    sizes = [max(len(uniques), 1) for _, uniques in factorised]
    combined = np.ravel_multi_index([np.asarray(codes) for codes, _ in factorised], sizes)
    distinct, inverse = np.unique(combined, return_inverse=True)
    positions = np.unravel_index(distinct, sizes)
    keys = [
        tuple(str(uniques[position[k]]) for (_, uniques), position in zip(factorised, positions, strict=True))
        for k in range(len(distinct))
    ]
    return [keys[i] for i in inverse.tolist()]
