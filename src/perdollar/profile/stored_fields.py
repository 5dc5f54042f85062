"""Typed reads of the JSON documents this stage keeps (traced profiles and layers, in the cache
folder and shipped with the package).

Each reader returns the field as its type or raises TypeError (KeyError for a missing field),
which the stores take, as for any damaged file, to mean: trace again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar, get_args

from perdollar.profile.model import MemoryBreakdown, OperatorClass, OperatorRecord, Phase

Word = TypeVar("Word", bound=str)


def _wrong(key: str, value: object, wanted: str) -> TypeError:
    return TypeError(f"stored field {key!r} is {type(value).__name__}, not {wanted}")


def text(document: Mapping[str, object], key: str) -> str:
    value = document[key]
    if not isinstance(value, str):
        raise _wrong(key, value, "text")
    return value


def number(document: Mapping[str, object], key: str) -> float:
    """A number as stored (an int stays an int, as the dataclass held it before it was written)."""
    value = document[key]
    if not isinstance(value, int | float):
        raise _wrong(key, value, "a number")
    return value


def whole(document: Mapping[str, object], key: str) -> int:
    value = document[key]
    if not isinstance(value, int):
        raise _wrong(key, value, "a whole number")
    return value


def one_of(document: Mapping[str, object], key: str, words: tuple[Word, ...]) -> Word:
    """A field whose value is one of ``words`` (the values of a ``Literal`` type)."""
    value = document[key]
    for word in words:
        if value == word:
            return word
    raise _wrong(key, value, f"one of {', '.join(words)}")


def items(document: Mapping[str, object], key: str) -> Sequence[object]:
    value = document[key]
    if not isinstance(value, list | tuple):
        raise _wrong(key, value, "a list")
    return value


def mapping(value: object, key: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _wrong(key, value, "an object")
    return value


_CLASSES: tuple[OperatorClass, ...] = get_args(OperatorClass)
_PHASES: tuple[Phase, ...] = get_args(Phase)


def _gemm_mnk(value: object) -> tuple[int, int, int] | None:
    if not value:
        return None
    sizes = [v for v in value if isinstance(v, int)] if isinstance(value, list | tuple) else []
    if len(sizes) != 3 or not isinstance(value, list | tuple) or len(value) != 3:
        raise _wrong("gemm_mnk", value, "three whole numbers")
    return (sizes[0], sizes[1], sizes[2])


def operator_record(value: object) -> OperatorRecord:
    """One stored :class:`OperatorRecord` (its fields by name, ``gemm_mnk`` as a list)."""
    fields = mapping(value, "operators")
    unknown = set(fields) - set(OperatorRecord.__dataclass_fields__)
    if unknown:
        raise TypeError(f"a stored operator has fields {sorted(unknown)} that an operator record lacks")
    return OperatorRecord(
        name=text(fields, "name"),
        op_class=one_of(fields, "op_class", _CLASSES),
        phase=one_of(fields, "phase", _PHASES),
        flops=number(fields, "flops"),
        bytes_read=number(fields, "bytes_read"),
        bytes_written=number(fields, "bytes_written"),
        dtype=text(fields, "dtype"),
        count=whole(fields, "count") if "count" in fields else 1,
        shape=text(fields, "shape") if "shape" in fields else "",
        gemm_mnk=_gemm_mnk(fields.get("gemm_mnk")),
    )


def memory_breakdown(value: object) -> MemoryBreakdown:
    fields = mapping(value, "memory")
    unknown = set(fields) - set(MemoryBreakdown.__dataclass_fields__)
    if unknown:
        raise TypeError(f"a stored memory breakdown has fields {sorted(unknown)} it lacks")
    return MemoryBreakdown(
        weights=number(fields, "weights"),
        gradients=number(fields, "gradients"),
        optimizer_state=number(fields, "optimizer_state"),
        activations=number(fields, "activations"),
        workspace=number(fields, "workspace"),
    )
