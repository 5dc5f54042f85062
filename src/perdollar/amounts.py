"""The numbers a question is given (counts, durations, amounts, probabilities), checked in one place.

The command line reads them as option text (``--samples 250M``, ``--deadline 72h``, ``--budget 20``)
and the Python API as arguments (``samples=2.5e8``, ``deadline_hours=72``); both go through the
functions here, so a value one refuses the other refuses too, with the same one-line error.
An option's label says how to write it: ``--samples`` for the command line, ``samples`` for the API.
"""

from __future__ import annotations

import math
import re

from perdollar.errors import PerdollarError

# Kinds by option name (without leading dashes); a number not named here must be positive.
NON_NEGATIVE = {
    "checkpoint-seconds", "restart-minutes", "max-wait-ms", "min-accelerator-memory",
    "min-accelerators", "min-vcpus", "min-memory", "data-bytes-per-sample", "top",
}  # fmt: skip
PROBABILITIES = {"confidence", "deadline-confidence"}
ABOVE_ONE = {"growth"}  # a factor each step multiplies by

_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+]?[0-9]+)?)\s*([kmgbt]?)\s*$", re.I)
_COUNT_SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "b": 1e9, "t": 1e12}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[0-9]+)?)\s*(s|sec|m|min|h|hr|d|day|days)?\s*$", re.I)
_UNIT_HOURS = {"s": 1 / 3600, "sec": 1 / 3600, "m": 1 / 60, "min": 1 / 60, "h": 1, "hr": 1,
               "d": 24, "day": 24, "days": 24}  # fmt: skip


def _kind_of(option: str) -> str:
    return option.lstrip("-").replace("_", "-")


def _written(option: str, example: str) -> str:
    """How a value is given: ``--samples 1e9`` on the command line, ``samples=1e9`` in Python."""
    return f"{option} {example}" if option.startswith("--") else f"{option}={example}"


def _example(option: str) -> str:
    kind = _kind_of(option)
    return "0.9" if kind in PROBABILITIES else "2" if kind in ABOVE_ONE else "10"


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_value(option: str, value: object, *, integer: bool = False) -> None:
    """Raise the one-line error for ``value`` of ``option`` if its kind does not allow it."""
    example = f"e.g. {_written(option, _example(option))}"
    if not _is_number(value) or (integer and not isinstance(value, int)):
        what = "an integer" if integer else "a number"
        raise PerdollarError(f"{option} must be {what}, got {value!r}", f"give {example}")
    assert isinstance(value, int | float)
    if isinstance(value, float) and not math.isfinite(value):
        raise PerdollarError(f"{option} must be a finite number, got {value}", f"give {example}")
    kind = _kind_of(option)
    if kind in PROBABILITIES:
        if not 0 < value < 1:
            raise PerdollarError(f"{option} is a probability between 0 and 1, got {value:g}", example)
    elif kind in ABOVE_ONE:
        if value <= 1:
            raise PerdollarError(f"{option} must be above 1, got {value:g}", example)
    elif value < 0:
        raise PerdollarError(f"{option} cannot be negative, got {value:g}", example)
    elif value == 0 and kind not in NON_NEGATIVE:
        what = "a positive integer" if integer else "positive"
        raise PerdollarError(f"{option} must be {what}, got {value:g}", example)


def count(value: object, option: str) -> float:
    """``1e9``, ``2.5M``, ``10k`` or a plain number (text or a Python number) → a positive count."""
    if _is_number(value):
        check_value(option, value)
        return float(value)  # type: ignore[arg-type]
    match = _COUNT.match(value) if isinstance(value, str) else None
    if not match:
        raise PerdollarError(
            f"{option} {value!r} is not a count", f"write it like {_written(option, _quoted(option, '250M'))}"
        )
    number = float(match.group(1)) * _COUNT_SCALE[match.group(2).lower()]
    if not math.isfinite(number):
        raise PerdollarError(
            f"{option} {value!r} is too large to be a count", f"write it like {_written(option, '1e9')}"
        )
    if number <= 0:
        raise PerdollarError(f"{option} must be positive, got {value!r}", "give a positive count")
    return number


def duration_hours(value: object, option: str) -> float:
    """``48h``, ``90m``, ``2d``, ``3600s`` or a bare number of hours (text or a number) → hours."""
    if _is_number(value):
        check_value(option, value)
        return float(value)  # type: ignore[arg-type]
    match = _DURATION.match(value) if isinstance(value, str) else None
    if not match:
        raise PerdollarError(
            f"{option} {value!r} is not a duration",
            f"write it like {_written(option, _quoted(option, '48h'))}, 90m, 2d or 3600s",
        )
    hours = float(match.group(1)) * _UNIT_HOURS[(match.group(2) or "h").lower()]
    if not math.isfinite(hours) or hours <= 0:
        raise PerdollarError(
            f"{option} must be a positive, finite duration, got {value!r}",
            f"e.g. {_written(option, _quoted(option, '48h'))} or 2d",
        )
    return hours


def optional(value: object, option: str, *, integer: bool = False) -> None:
    """:func:`check_value` for an argument that may also be left out (None)."""
    if value is not None:
        check_value(option, value, integer=integer)


def text(value: object, option: str, example: str) -> str:
    """A name the user must give (an instance type, a workload): non-empty text."""
    if not isinstance(value, str) or not value.strip():
        raise PerdollarError(
            f"{option} must name something, got {value!r}", f"e.g. {_written(option, repr(example))}"
        )
    return value


def _quoted(option: str, example: str) -> str:
    return example if option.startswith("--") else repr(example)


_BYTES = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+]?[0-9]+)?)\s*([kmgtp]?)(i?)b\s*$", re.I)
_BYTE_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def data_size_bytes(text: str | None) -> float | None:
    """``20TB`` → 2e13 bytes (decimal, as clouds bill), ``1.5TiB`` → 1.5·2⁴⁰; None without a byte unit."""
    match = _BYTES.match(text) if isinstance(text, str) else None
    if text is None or not match:
        return None
    number, prefix, binary = match.groups()
    base = 1024.0 if binary else 1000.0
    size = float(number) * base ** _BYTE_POWERS[prefix.lower()]
    if not math.isfinite(size):  # 1e400TB: a float reads it as infinity, and an infinite bill follows
        raise PerdollarError(f"a data size of {text.strip()} is too large to be a number of bytes",
                             "give a size such as 20TB or 500GB")  # fmt: skip
    return size
