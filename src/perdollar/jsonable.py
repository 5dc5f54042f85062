"""Plain JSON values from the vocabulary's objects, shared by ``--json`` output and the store."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, overload

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# A value as JSON carries it. Documents read from files, the store or a cloud's API are typed as
# this (and narrowed where they are read) rather than left untyped.
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"


@overload
def to_jsonable(value: DataclassInstance) -> JsonObject: ...
@overload
def to_jsonable(value: object) -> JsonValue: ...


def to_jsonable(value: object) -> JsonValue:
    """Dataclasses, enums, dates, paths, numpy scalars and NaN → plain JSON values.

    A dataclass lists derived values its JSON carries too (read back, they are ignored) in a
    ``json_properties`` class attribute: an estimate's ``label``. One whose JSON is not its fields
    as they are gives it from a ``json_form`` method: a question, written as it always was.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        form = getattr(value, "json_form", None)
        if callable(form):
            return to_jsonable(form())
        derived = {name: to_jsonable(getattr(value, name)) for name in getattr(value, "json_properties", ())}
        return derived | {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_jsonable(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return to_jsonable(value.item())
    if value is None or isinstance(value, bool | int | str):
        return value
    # Anything else passes through as it came, for ``json.dumps`` (or the CSV writer) to judge.
    return value  # type: ignore[return-value]
