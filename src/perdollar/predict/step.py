"""Step time of a profile on accelerators: the roofline, the calibration and the band."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.predict.model import Basis
from perdollar.predict.params import ModelParams, shipped_model
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import CLASS_NAMES, DeviceTable, OperatorTable
from perdollar.profile.model import Profile


@dataclass(frozen=True, slots=True)
class StepTimeEstimate:
    """One step of the profile on one accelerator (per-device batch = the profile's batch)."""

    seconds: float
    low: float  # fast end of the band (seconds)
    high: float  # slow end of the band (seconds)
    basis: Basis
    bottleneck: str  # compute | memory-bandwidth | overhead
    breakdown: dict[str, float] = field(default_factory=dict)  # seconds per operator class
    backward_seconds: float = 0.0


@dataclass(frozen=True)
class DeviceSteps:
    """Roofline step times of one profile on many accelerators (before calibration)."""

    keys: tuple[str, ...]
    seconds: np.ndarray
    compute_bound: np.ndarray  # seconds of operators bound by compute
    memory_bound: np.ndarray
    overhead: np.ndarray
    backward: np.ndarray
    by_class: dict[str, np.ndarray]

    @property
    def memory_share(self) -> np.ndarray:
        return self.memory_bound / np.maximum(self.seconds, 1e-30)

    def bottleneck(self, i: int) -> str:
        parts = {
            "compute": self.compute_bound[i],
            "memory-bandwidth": self.memory_bound[i],
            "overhead": self.overhead[i],
        }
        return max(parts, key=lambda k: parts[k])

    def rescaled(
        self, i: int, device_seconds: float, step_seconds: float, host_bound: bool = False
    ) -> tuple[dict[str, float], str]:
        """Breakdown and bottleneck of device ``i`` once its kernels take ``device_seconds`` and its
        step ``step_seconds`` (calibrated or measured); the difference is waiting on the host."""
        scale = device_seconds / max(float(self.seconds[i]), 1e-30)
        parts = {name: float(values[i]) * scale for name, values in self.by_class.items()}
        if step_seconds > device_seconds:
            parts["host dispatch"] = step_seconds - device_seconds
        return parts, "overhead" if host_bound else self.bottleneck(i)


def device_steps(
    profile: Profile, accelerators: Sequence[Accelerator], params: ModelParams | None = None
) -> DeviceSteps:
    params = params or shipped_model().params
    devices = DeviceTable.from_accelerators(accelerators)
    ops = OperatorTable.from_profile(profile, params.gemm_tile)
    times = operator_times(devices, ops, params)
    total = times.total
    compute_wins = times.compute >= times.memory
    by_class = {}
    for index, name in enumerate(CLASS_NAMES):
        mask = ops.class_index == index
        if mask.any():
            by_class[name] = total[:, mask].sum(axis=1)
    # The per-step framework time is part of the step (the breakdown sums to it).
    by_class["framework"] = np.full(len(devices.keys), params.step_overhead_s)
    bound = times.bound
    return DeviceSteps(
        keys=devices.keys,
        seconds=total.sum(axis=1) + params.step_overhead_s,
        compute_bound=np.where(compute_wins, bound, 0.0).sum(axis=1),
        memory_bound=np.where(compute_wins, 0.0, bound).sum(axis=1),
        # Launch overhead and the per-step framework time are the same on every device.
        overhead=np.full(len(devices.keys), times.overhead.sum() + params.step_overhead_s),
        backward=total[:, ops.is_backward].sum(axis=1),
        by_class=by_class,
    )


def band_seconds(seconds: float, basis: str, stack: str = "cuda") -> tuple[float, float]:
    """(fast, slow) ends of the 80% band of a step time, from the observed errors of ``basis``."""
    errors = shipped_model().errors_for(basis, stack)
    # errors are log(actual/predicted) of throughput: a faster actual means a shorter step.
    return seconds * math.exp(-errors.q90), seconds * math.exp(-errors.q10)
