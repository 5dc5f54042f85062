"""Per-workload calibration: measurements of this workload correct the roofline's step times.

With one accelerator measured, the measured/predicted ratio scales every accelerator (the
model's ratios carry the prediction across). With two or more, a tilt between memory-bound and
compute-bound time is fitted too (log ratio regressed on the memory share of each step), so a
workload that runs more memory-bound than traced transfers with the right slope.

A GPU measurement also says how long the host took to enqueue one step (``perdollar bench``
times it with the GPU held busy). A step takes about the longer of the device's time and the
host's, so the host's time is a floor that no faster GPU gets under: it is taken out of each
anchor's step before the ratio is formed, and put back, as the same floor, on every accelerator.
An anchor that the host bounds says nothing of its device's speed and sets no ratio. The
candidates' hosts are taken to enqueue as fast as the measuring one (their CPUs are not modelled).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perdollar.measure.result import Measurement
from perdollar.predict.step import device_steps
from perdollar.profile.model import Profile

_DEVICE_MODES = ("cached-input", "full", "inference", "command")
# Exponent of the soft maximum of device and host time per step: at equal times the step is
# 2 ** (1/4), 19%, longer than either (the queue runs dry now and then). On this project's H100
# it puts the step within 2.9% (median) of the measured one over 35 points whose host and device
# times were measured apart (benchmarks/host_floor_check.py).
HOST_OVERLAP_SHARPNESS = 4.0
# An anchor whose step is within this factor of its host time is bound by the host.
_HOST_BOUND_MARGIN = 1.1


def with_host_floor(
    device_seconds: np.ndarray | float, host_seconds: np.ndarray | float | None
) -> np.ndarray:
    """Step seconds when the host needs ``host_seconds`` to enqueue what the device runs."""
    device = np.array(device_seconds, dtype=float)  # a copy: callers change the two apart
    if host_seconds is None:
        return device
    host = np.asarray(host_seconds, dtype=float)
    p = HOST_OVERLAP_SHARPNESS
    return np.where(host > 0, (device**p + host**p) ** (1.0 / p), device)


def device_seconds_of_steps(step_seconds: np.ndarray | float, host_seconds: np.ndarray | float) -> np.ndarray:
    """The device's time in measured steps, the host's floor taken out (NaN where host-bound)."""
    step, host = np.asarray(step_seconds, dtype=float), np.asarray(host_seconds, dtype=float)
    p = HOST_OVERLAP_SHARPNESS
    device = np.maximum(step**p - host**p, 0.0) ** (1.0 / p)
    return np.where(step <= _HOST_BOUND_MARGIN * host, np.nan, np.where(host > 0, device, step))


def device_share_of_step(step_seconds: float, host_seconds: float | None) -> float | None:
    """The device's time in a measured step, the host's floor taken out (None: host-bound)."""
    if not host_seconds:
        return step_seconds
    device = float(device_seconds_of_steps(step_seconds, host_seconds))
    return None if math.isnan(device) else device


@dataclass(frozen=True, slots=True)
class Calibration:
    workload_fingerprint: str
    scale: float = 1.0  # measured step time / predicted, at the mean memory share of the anchors
    tilt: float = 0.0  # d log(scale) / d memory share
    anchor_memory_share: float = 0.0
    measured_samples_per_second: dict[str, float] = field(default_factory=dict)  # per device, by key
    anchors: tuple[str, ...] = ()
    cpu_samples_per_second_per_core: float | None = None
    input_samples_per_second_per_core: float | None = None  # data-only mode
    overlap: float | None = None  # backward/all-reduce overlap learned from --nproc runs (unused: None)
    host_seconds: float | None = None  # the host's time to enqueue one step, measured on a GPU

    @property
    def has_device_anchor(self) -> bool:
        return bool(self.anchors)

    def factor(self, memory_share: np.ndarray | float) -> np.ndarray:
        """Multiplier of the roofline step time for a step with this memory share."""
        return self.scale * np.exp(
            self.tilt * (np.asarray(memory_share, dtype=float) - self.anchor_memory_share)
        )

    def device_and_step_seconds(
        self, model_seconds: np.ndarray | float, memory_share: np.ndarray | float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Calibrated kernel seconds, step seconds (under the measured host's floor) and whether
        the host bounds the step, for roofline step times with these memory shares."""
        device = np.asarray(model_seconds, dtype=float) * self.factor(memory_share)
        step = with_host_floor(device, self.host_seconds)
        return device, step, self.host_bounds(step)

    def host_bounds(self, step_seconds: np.ndarray | float) -> np.ndarray:
        """Whether the measured host time bounds steps of these lengths (measured or predicted):
        the same rule that keeps a host-bound anchor from setting a ratio."""
        step = np.asarray(step_seconds, dtype=float)
        if not self.host_seconds:
            return np.zeros(step.shape, dtype=bool)
        return step <= _HOST_BOUND_MARGIN * self.host_seconds

    @classmethod
    def from_measurements(
        cls, profile: Profile, measurements: Sequence[Measurement], catalog: object
    ) -> Calibration:
        """Use every ok measurement of this workload (same fingerprint, or same name, batch and precision)."""
        relevant = [m for m in measurements if m.ok and m.samples_per_second and same_workload(profile, m)]
        per_device: dict[str, list[float]] = {}
        host_times: list[float] = []
        cpu_rates, input_rates = [], []
        for m in relevant:
            rate = m.samples_per_second.median if m.samples_per_second else 0.0
            if m.mode == "data-only":
                input_rates.append(rate / max(m.host.cpu_cores, 1))
                continue
            if m.mode not in _DEVICE_MODES:
                continue
            key = _accelerator_key(m, catalog)
            if key is None:
                if not m.host.accelerator:
                    cpu_rates.append(rate / max(m.host.cpu_cores, 1))
                continue
            per_device.setdefault(key, []).append(rate / max(m.nproc, 1))
            host_ms = m.extra.get("host_dispatch_ms")
            if isinstance(host_ms, int | float) and host_ms > 0 and m.nproc == 1:
                host_times.append(host_ms / 1e3)
        measured = {k: float(np.median(v)) for k, v in per_device.items()}
        host_seconds = float(np.median(host_times)) if host_times else None
        base = cls(
            workload_fingerprint=profile.workload_fingerprint,
            cpu_samples_per_second_per_core=float(np.median(cpu_rates)) if cpu_rates else None,
            input_samples_per_second_per_core=float(np.median(input_rates)) if input_rates else None,
        )
        if not measured:
            return base
        accelerators = [catalog.accelerators[k] for k in measured]  # type: ignore[attr-defined]
        steps = device_steps(profile, accelerators)
        device_seconds = [
            device_share_of_step(profile.batch_size / rate, host_seconds) for rate in measured.values()
        ]
        # Host-bound anchors say nothing of their device: the others set the ratio (none: specs).
        informative = np.array([seconds is not None for seconds in device_seconds])
        log_ratio = np.log(
            np.array([s for s in device_seconds if s is not None]) / steps.seconds[informative]
        )  # = log(actual device time / model)
        share = steps.memory_share[informative]
        tilt = 0.0
        if len(log_ratio) >= 2 and np.ptp(share) > 0.05:
            tilt = float(np.clip(np.polyfit(share - share.mean(), log_ratio, 1)[0], -3.0, 3.0))
        return Calibration(
            workload_fingerprint=profile.workload_fingerprint,
            scale=float(math.exp(log_ratio.mean())) if len(log_ratio) else 1.0,
            tilt=tilt,
            anchor_memory_share=float(share.mean()) if len(share) else 0.0,
            measured_samples_per_second=measured,
            anchors=tuple(measured),
            cpu_samples_per_second_per_core=base.cpu_samples_per_second_per_core,
            input_samples_per_second_per_core=base.input_samples_per_second_per_core,
            host_seconds=host_seconds,
        )


def same_workload(profile: Profile, m: Measurement) -> bool:
    """A measurement is of this workload: same fingerprint, or same name, batch and precision."""
    if m.workload_fingerprint == profile.workload_fingerprint:
        return True
    return (
        m.workload_name == profile.workload_name
        and m.batch_size == profile.batch_size
        and m.precision == profile.precision
    )


def _accelerator_key(m: Measurement, catalog: object) -> str | None:
    accelerators = getattr(catalog, "accelerators", {})
    if m.host.accelerator_key and m.host.accelerator_key in accelerators:
        return m.host.accelerator_key
    for name in (m.host.accelerator_key, m.host.accelerator):
        if not name:
            continue
        try:
            return catalog.accelerator(name).key  # type: ignore[attr-defined]
        except Exception:  # an accelerator the catalog does not know cannot anchor a prediction
            continue
    return None
