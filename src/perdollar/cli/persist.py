"""Hooks through which `bench`, `recommend` and `sweep` store their results.

The commands call these; the store stage implements them. Keeping them here means a command
module never opens a database itself.
"""

from __future__ import annotations

from typing import Any


def save_measurement(measurement: Any, *, store_url: str | None, enabled: bool = True) -> str | None:
    """Store a :class:`~perdollar.measure.result.Measurement`; return its id (None if not stored)."""
    return None


def save_recommendation(recommendation: Any, *, store_url: str | None, enabled: bool = True) -> str | None:
    """Store a :class:`~perdollar.select.model.Recommendation`; return its id."""
    return None


def stored_measurements(workload_fingerprint: str, *, store_url: str | None) -> list[Any]:
    """Measurements stored earlier for this workload fingerprint (used for calibration)."""
    return []
