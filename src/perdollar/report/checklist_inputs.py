"""Turning stored or fresh measurements into the checklist's evidence."""

from __future__ import annotations

from perdollar.measure.result import Measurement
from perdollar.report.checklist import Evidence


def latest_by_mode(measurements: list[Measurement]) -> dict[str, Measurement]:
    """The newest successful single-process measurement per mode, plus ``multi`` for --nproc runs."""
    chosen: dict[str, Measurement] = {}
    for measurement in sorted(measurements, key=lambda m: m.started_at):
        if not measurement.ok:
            continue
        chosen["multi" if measurement.nproc > 1 else measurement.mode] = measurement
    return chosen


def evidence_from_measurements(
    measurements: list[Measurement],
    *,
    precision: str | None = None,
    input_bytes_per_sample: float | None = None,
    max_batch_that_fits: int | None = None,
) -> Evidence:
    by_mode = latest_by_mode(measurements)
    cached = by_mode.get("cached-input")
    return Evidence(
        cached=cached,
        full=by_mode.get("full"),
        data_only=by_mode.get("data-only"),
        multi=by_mode.get("multi"),
        precision=precision or (cached.precision if cached else None),
        input_bytes_per_sample=input_bytes_per_sample,
        max_batch_that_fits=max_batch_that_fits,
    )


def max_batch_for(
    *, static_bytes: float, per_sample_bytes: float, capacity_bytes: float, headroom: float = 0.9
) -> int | None:
    """The largest batch whose memory (fixed part + per-sample part) fits in ``headroom`` of capacity."""
    if per_sample_bytes <= 0:
        return None
    batch = int((capacity_bytes * headroom - static_bytes) // per_sample_bytes)
    return batch if batch > 0 else None
