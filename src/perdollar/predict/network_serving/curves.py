"""Latency vs batch size on each accelerator: predicted from the forward-only profile, or measured."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.measure.result import Measurement
from perdollar.predict.calibration import Calibration
from perdollar.predict.frame import SUPPORTED_STACKS, usable_memory_bytes
from perdollar.predict.network_serving.plans import CPU_BAND, CPU_KEY, ServiceCurve
from perdollar.predict.step_time import predict_step_time
from perdollar.profile.model import Profile

MeasuredPoints = dict[int, tuple[float, float, float]]


def predict_service_curves(
    profiles: Mapping[int, Profile],
    accelerators: Mapping[str, Accelerator],
    accelerator_keys: Sequence[str],
    *,
    precision: str,
    calibration: Calibration | None = None,
    measured: Mapping[str, Mapping[int, tuple[float, float, float]]] | None = None,
) -> dict[str, ServiceCurve]:
    """Latency vs batch size on each accelerator, from the forward-only profile.

    ``measured`` maps an accelerator key to ``{batch: (p50 s, p10 s, p90 s)}`` from a local
    curve; on that accelerator the measurement replaces the prediction (basis ``measured``) and
    the prediction fills the batch sizes it did not reach, scaled to agree with it.
    """
    curves: dict[str, ServiceCurve] = {}
    for key in accelerator_keys:
        accelerator = accelerators.get(key)
        if accelerator is None:
            continue
        capacity = usable_memory_bytes(accelerator.memory_gib)
        sizes, seconds, low, high = [], [], [], []
        basis, bottleneck = "spec", ""
        reason = unsupported_reason(accelerator, precision)
        for batch, profile in profiles.items():
            if reason:
                break
            if profile.memory.total > capacity:
                break
            try:
                estimate = predict_step_time(profile, accelerator, calibration)
            except Exception as error:  # an unsupported dtype or stack is a reason, not a crash
                reason = str(error).split(" — ")[0]
                break
            if not estimate.seconds > 0:
                reason = f"no usable latency prediction on {key}"
                break
            sizes.append(batch)
            seconds.append(estimate.seconds)
            low.append(estimate.low)
            high.append(estimate.high)
            basis, bottleneck = estimate.basis, estimate.bottleneck
        if not sizes and not reason:
            gib = profiles[min(profiles)].memory.total / 2**30
            reason = f"needs {gib:.3g} GiB at batch 1, over the {accelerator.memory_gib:g} GiB of one device"
        curve = ServiceCurve(
            key,
            tuple(sizes),
            tuple(seconds),
            tuple(low),
            tuple(high),
            basis,
            bottleneck,
            "" if sizes else reason,
        )
        if measured and key in measured:
            curve = _with_measurements(curve, measured[key])
        curves[key] = curve
    return curves


def unsupported_reason(accelerator: Accelerator, precision: str) -> str:
    """The hard reasons the training prediction uses too: software stack, then bf16 support."""
    if accelerator.software_stack not in SUPPORTED_STACKS:
        return (
            f"PyTorch eager on a {accelerator.software_stack} stack needs a compiler path "
            "perdollar does not model"
        )
    if precision in ("amp-bf16", "bf16") and not accelerator.supports_bf16:
        return "bf16 not supported by this accelerator"
    return ""


def _with_measurements(curve: ServiceCurve, points: Mapping[int, tuple[float, float, float]]) -> ServiceCurve:
    """Measured points win; predicted ones are scaled by the median measured/predicted ratio."""
    predicted = dict(zip(curve.batch_sizes, curve.seconds, strict=True))
    ratios = [points[b][0] / predicted[b] for b in points if b in predicted and predicted[b] > 0]
    scale = float(np.median(ratios)) if ratios else 1.0
    sizes = sorted(set(curve.batch_sizes) | set(points))
    rows = []
    for batch in sizes:
        if batch in points:
            rows.append(points[batch])
        elif batch in predicted:
            index = curve.batch_sizes.index(batch)
            rows.append((curve.seconds[index] * scale, curve.low[index] * scale, curve.high[index] * scale))
    return ServiceCurve(
        curve.accelerator_key,
        tuple(sizes),
        tuple(r[0] for r in rows),
        tuple(r[1] for r in rows),
        tuple(r[2] for r in rows),
        "measured",
        curve.bottleneck,
    )


def cpu_curve(points: Mapping[int, tuple[float, float, float]]) -> ServiceCurve:
    """A measured CPU host's curve for CPU-only instances, with the band other CPUs may fall in."""
    sizes = tuple(sorted(points))
    seconds = tuple(points[b][0] for b in sizes)
    low = tuple(points[b][0] * CPU_BAND[0] for b in sizes)
    high = tuple(max(points[b][2], points[b][0]) * CPU_BAND[1] for b in sizes)
    return ServiceCurve(CPU_KEY, sizes, seconds, low, high, "calibrated", "cpu")


def measured_curves(
    measurements: Sequence[Measurement],
) -> tuple[dict[str, MeasuredPoints], tuple[float, MeasuredPoints] | None]:
    """Local latency curves (``bench --inference``) by accelerator key, and the latest CPU host's.

    Each point is ``batch → (p50 s, fastest s, p90 s)`` of one closed-loop client.
    """
    curves: dict[str, MeasuredPoints] = {}
    cpu: tuple[float, MeasuredPoints] | None = None
    for measurement in measurements:
        if measurement.mode != "inference" or not measurement.ok:
            continue
        points: MeasuredPoints = {}
        for point in measurement.extra.get("latency_curve", []):
            if point.get("concurrency") == 1 and point.get("status") == "ok":
                points[int(point["batch_size"])] = (
                    point["p50_ms"] / 1e3,
                    point["min_ms"] / 1e3,
                    point["p90_ms"] / 1e3,
                )
        key = measurement.host.accelerator_key
        if key:
            curves[key] = points
        elif points and measurement.extra.get("device", "cpu") == "cpu":
            cpu = (float(measurement.host.cpu_cores), points)
    return curves, cpu
