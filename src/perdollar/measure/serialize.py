"""Measurements to and from plain JSON data (the bench ``--json`` output and the store's format)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, fields
from typing import TypeVar

from perdollar.errors import PerdollarError
from perdollar.measure.result import HostFingerprint, Measurement, Rate

T = TypeVar("T")


def _finite(value: object) -> object:
    """NaN and infinities become None: JSON has no spelling for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def measurement_to_dict(measurement: Measurement) -> dict[str, object]:
    """A JSON-ready dict; :func:`measurement_from_dict` gives the same measurement back."""
    data = {name: _finite(value) for name, value in asdict(measurement).items()}
    # The field names: the workload as one object beside the flat fields the store indexes.
    data["workload"] = {"name": measurement.workload_name, "fingerprint": measurement.workload_fingerprint}
    return data


def _known(cls: type, data: object) -> dict[str, object]:
    # Fields added later get their defaults; unknown keys (from a newer perdollar) are ignored.
    if not isinstance(data, Mapping):
        raise TypeError(f"the {cls.__name__} is {type(data).__name__}, not an object")
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def _made(cls: type[T], values: Mapping[str, object]) -> T:
    # The dataclass checks the field names; the values are what the document held.
    return cls(**values)


def _listed(value: object) -> tuple[object, ...]:
    if not isinstance(value, Iterable):
        raise TypeError(f"'{type(value).__name__}' object is not iterable")
    return tuple(value)


def _keyed(value: object, name: str) -> dict[object, object]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} is {type(value).__name__}, not an object")
    return dict(value)


def measurement_from_dict(data: Mapping[str, object]) -> Measurement:
    """Rebuild a :class:`Measurement` from :func:`measurement_to_dict` output (or stored JSON)."""
    try:
        values = _known(Measurement, data)
        workload = data.get("workload")
        if isinstance(workload, dict):
            values.setdefault("workload_name", workload.get("name", ""))
            values.setdefault("workload_fingerprint", workload.get("fingerprint", ""))
        values["host"] = _made(HostFingerprint, _known(HostFingerprint, data["host"]))
        rate = data.get("samples_per_second")
        values["samples_per_second"] = _made(Rate, _known(Rate, rate)) if rate else None
        values["warnings"] = _listed(data.get("warnings") or ())
        for name in ("step_time_ms", "utilization", "extra"):
            values[name] = _keyed(data.get(name) or {}, name)
        return _made(Measurement, values)
    except (KeyError, TypeError) as error:
        raise PerdollarError(
            f"not a perdollar measurement: {error}",
            "give the JSON that `perdollar bench --json` printed",
        ) from error
