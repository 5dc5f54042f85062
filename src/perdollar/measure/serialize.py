"""Measurements to and from plain JSON data (the bench ``--json`` output and the store's format)."""

from __future__ import annotations

import math
from dataclasses import asdict, fields
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.measure.result import HostFingerprint, Measurement, Rate


def _finite(value: Any) -> Any:
    """NaN and infinities become None: JSON has no spelling for them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def measurement_to_dict(measurement: Measurement) -> dict[str, Any]:
    """A JSON-ready dict; :func:`measurement_from_dict` gives the same measurement back."""
    data: dict[str, Any] = _finite(asdict(measurement))
    # The field names: the workload as one object beside the flat fields the store indexes.
    data["workload"] = {"name": measurement.workload_name, "fingerprint": measurement.workload_fingerprint}
    return data


def _known(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    # Fields added later get their defaults; unknown keys (from a newer perdollar) are ignored.
    names = {f.name for f in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


def measurement_from_dict(data: dict[str, Any]) -> Measurement:
    """Rebuild a :class:`Measurement` from :func:`measurement_to_dict` output (or stored JSON)."""
    try:
        values = _known(Measurement, data)
        workload = data.get("workload")
        if isinstance(workload, dict):
            values.setdefault("workload_name", workload.get("name", ""))
            values.setdefault("workload_fingerprint", workload.get("fingerprint", ""))
        values["host"] = HostFingerprint(**_known(HostFingerprint, data["host"]))
        rate = data.get("samples_per_second")
        values["samples_per_second"] = Rate(**_known(Rate, rate)) if rate else None
        values["warnings"] = tuple(data.get("warnings") or ())
        for name in ("step_time_ms", "utilization", "extra"):
            values[name] = dict(data.get(name) or {})
        return Measurement(**values)
    except (KeyError, TypeError) as error:
        raise PerdollarError(
            f"not a perdollar measurement: {error}",
            "give the JSON that `perdollar bench --json` printed",
        ) from error
