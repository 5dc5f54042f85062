"""A stored fleet's figures read field by field: a number, a part, a list of texts, the intervals.

The answer of a fleet over the day is stored as plain data (:attr:`Recommendation.fleet`); a row
damaged by hand is refused in one line naming the field, never drawn from or compared.
"""

from __future__ import annotations

from collections.abc import Mapping

from perdollar.errors import PerdollarError

DAMAGED_FIX = "ask the question afresh with perdollar recommend --load-curve/--trace"

Figures = Mapping[str, object]  # one part of the stored answer, read field by field below


def fleet_number(part: Figures, name: str) -> float:
    """A number of the stored answer as it was stored (an int stays an int), or a one-line error."""
    value = part.get(name)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    raise PerdollarError(f"the fleet's {name} is {str(value)[:40]!r}, not a number", DAMAGED_FIX)


def fleet_part(figures: Figures, key: str) -> Figures:
    part = figures.get(key)
    if not isinstance(part, Mapping):
        raise PerdollarError(f"the fleet's {key} is missing", DAMAGED_FIX)
    return part


def fleet_texts(part: Figures, name: str) -> list[str]:
    """A list of texts of the stored answer (a fleet's machines, its notes), or a one-line error."""
    texts = part.get(name)
    if not isinstance(texts, list | tuple) or not all(isinstance(text, str) for text in texts):
        raise PerdollarError(f"the fleet's {name} is not a list of texts", DAMAGED_FIX)
    return [str(text) for text in texts]


def fleet_intervals(figures: Figures) -> list[Figures]:
    """The answer's intervals, each a part of its own (none where the answer holds none)."""
    intervals = figures.get("intervals") or []
    if not isinstance(intervals, list) or not all(isinstance(row, Mapping) for row in intervals):
        raise PerdollarError("the fleet's intervals are missing", DAMAGED_FIX)
    return list(intervals)
