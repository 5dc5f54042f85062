"""frames.map_distinct: one decision per distinct value, handed back row by row as decided."""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np
import pandas as pd

from perdollar.frames import map_distinct


def _counting(decide):  # type: ignore[no-untyped-def]
    calls: list[Hashable] = []

    def wrapped(key: Hashable):  # type: ignore[no-untyped-def]
        calls.append(key)
        return decide(key)

    return wrapped, calls


def test_each_distinct_value_is_decided_once_and_every_row_gets_its_own() -> None:
    decide, calls = _counting(lambda cloud: f"rate of {cloud}")
    clouds = pd.Series(["aws", "gcp", "aws", "azure", "gcp"] * 1000)
    out = map_distinct(clouds, decide)
    assert out == [f"rate of {cloud}" for cloud in clouds]
    assert sorted(calls) == ["aws", "azure", "gcp"]


def test_a_decided_tuple_stays_one_value_per_row() -> None:
    out = map_distinct(pd.Series(["a", "b", "a"]), lambda key: (key, key))
    assert out == [("a", "a"), ("b", "b"), ("a", "a")]


def test_lists_are_read_as_their_tuples() -> None:
    decide, calls = _counting(len)
    flags = pd.Series([["spot"], ["spot", "quota"], ["spot"], []], dtype=object)
    assert map_distinct(flags, decide) == [1, 2, 1, 0]
    assert sorted(calls, key=len) == [(), ("spot",), ("spot", "quota")]


def test_tuples_and_missing_values_are_values_too() -> None:
    flags = pd.Series([("spot",), (), ("spot",)], dtype=object)
    assert map_distinct(flags, len) == [1, 0, 1]
    numbers = pd.Series([1.0, np.nan, 1.0, np.nan])
    assert map_distinct(numbers, lambda x: "missing" if x != x else "set") == [
        "set",
        "missing",
        "set",
        "missing",
    ]


def test_a_categorical_column_and_an_empty_one() -> None:
    assert map_distinct(pd.Series(["aws", "gcp", "aws"], dtype="category"), str.upper) == [
        "AWS",
        "GCP",
        "AWS",
    ]
    assert map_distinct(pd.Series([], dtype=object), str) == []
