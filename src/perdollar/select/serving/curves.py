"""Latency vs batch size on each accelerator: predicted from the forward-only profile, or measured."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perdollar.select.serving.plans import DEFAULT_BATCH_SIZES, MEMORY_HEADROOM, ServiceCurve


def predict_service_curves(
    workload: Any,
    catalog: Any,
    accelerator_keys: Sequence[str],
    *,
    batch_sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
    calibration: Any = None,
    measured: Mapping[str, Mapping[int, tuple[float, float, float]]] | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, ServiceCurve]:
    """Latency vs batch size on each accelerator, from the forward-only profile.

    ``measured`` maps an accelerator key to ``{batch: (p50 s, p10 s, p90 s)}`` from a local
    curve; on that accelerator the measurement replaces the prediction (basis ``measured``) and
    the prediction fills the batch sizes it did not reach, scaled to agree with it.
    """
    from perdollar.profile import profile_workload

    predict_step_time = _step_time_predictor()

    profiles = {}
    for batch in batch_sizes:
        if progress:
            progress(f"profiling the forward pass at batch {batch}")
        profiles[batch] = profile_workload(workload.with_overrides(batch_size=batch, kind="inference"))
    curves: dict[str, ServiceCurve] = {}
    for key in accelerator_keys:
        accelerator = catalog.accelerators.get(key)
        if accelerator is None:
            continue
        capacity = accelerator.memory_gib * 2**30 * MEMORY_HEADROOM
        sizes, seconds, low, high = [], [], [], []
        basis, bottleneck = "spec", ""
        reason = unsupported_reason(accelerator, workload.precision)
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
            refusal = str(getattr(estimate, "excluded_reason", "") or "")
            if refusal or not float(estimate.seconds) > 0:
                reason = refusal or f"no usable latency prediction on {key}"
                break
            sizes.append(batch)
            seconds.append(float(estimate.seconds))
            low.append(float(getattr(estimate, "low", estimate.seconds)))
            high.append(float(getattr(estimate, "high", estimate.seconds)))
            basis = str(getattr(estimate, "basis", "spec"))
            bottleneck = str(getattr(estimate, "bottleneck", ""))
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


def unsupported_reason(accelerator: Any, precision: str) -> str:
    """The hard reasons the predict stage uses too: software stack, then bf16 support."""
    try:
        from perdollar.predict.frame import SUPPORTED_STACKS
    except ImportError:
        supported: tuple[str, ...] = ("cuda", "rocm")
    else:
        supported = tuple(SUPPORTED_STACKS)
    if accelerator.software_stack not in supported:
        return (
            f"PyTorch eager on a {accelerator.software_stack} stack needs a compiler path "
            "perdollar does not model"
        )
    if precision in ("amp-bf16", "bf16") and not accelerator.supports_bf16:
        return "bf16 not supported by this accelerator"
    return ""


def _step_time_predictor() -> Callable[..., Any]:
    """The predict stage's step-time model; the private roofline below only where it is missing."""
    try:
        from perdollar.predict import predict_step_time
    except ImportError:
        return _roofline_step_time
    return predict_step_time


@dataclass(frozen=True)
class _StepTime:
    seconds: float
    low: float
    high: float
    basis: str
    bottleneck: str


_FALLBACK_EFFICIENCY = {"matmul": 0.6, "conv": 0.5, "attention": 0.5}
_FALLBACK_LAUNCH_S = 5e-6


def _roofline_step_time(profile: Any, accelerator: Any, calibration: Any = None) -> _StepTime:
    """Datasheet roofline of a forward pass (a band of −30 %/+60 %), used only without the predictor."""
    if accelerator.software_stack not in ("cuda", "rocm"):
        raise ValueError(f"no latency model for the {accelerator.software_stack} stack")
    compute = memory = overhead = 0.0
    for op in profile.operators:
        peak = accelerator.peak_tflops(op.dtype) or accelerator.peak_tflops("fp32")
        if not peak:
            raise ValueError(f"no peak rate for {op.dtype} on {accelerator.key}")
        efficiency = _FALLBACK_EFFICIENCY.get(op.op_class, 0.3)
        op_compute = op.flops / (peak * 1e12 * efficiency)
        op_memory = op.bytes_moved / (accelerator.memory_bandwidth_gbps * 1e9 * 0.7)
        compute += op_compute if op_compute >= op_memory else 0.0
        memory += op_memory if op_memory > op_compute else 0.0
        overhead += _FALLBACK_LAUNCH_S * op.count
    seconds = compute + memory + overhead
    bottleneck = max(
        (("compute", compute), ("memory-bandwidth", memory), ("overhead", overhead)), key=lambda pair: pair[1]
    )[0]
    return _StepTime(seconds, seconds * 0.7, seconds * 1.6, "spec", bottleneck)


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
