"""Per-workload calibration: measurements of this workload correct the roofline's step times.

With one accelerator measured, the measured/predicted ratio scales every accelerator (the
model's ratios carry the prediction across). With two or more, a tilt between memory-bound and
compute-bound time is fitted too (log ratio regressed on the memory share of each step), so a
workload that runs more memory-bound than traced transfers with the right slope.
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

    @property
    def has_device_anchor(self) -> bool:
        return bool(self.anchors)

    def factor(self, memory_share: np.ndarray | float) -> np.ndarray:
        """Multiplier of the roofline step time for a step with this memory share."""
        return self.scale * np.exp(
            self.tilt * (np.asarray(memory_share, dtype=float) - self.anchor_memory_share)
        )

    @classmethod
    def from_measurements(
        cls, profile: Profile, measurements: Sequence[Measurement], catalog: object
    ) -> Calibration:
        """Use every ok measurement of this workload (same fingerprint, or same name, batch and precision)."""
        relevant = [m for m in measurements if m.ok and m.samples_per_second and _same_workload(profile, m)]
        per_device: dict[str, list[float]] = {}
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
        measured = {k: float(np.median(v)) for k, v in per_device.items()}
        base = cls(
            workload_fingerprint=profile.workload_fingerprint,
            cpu_samples_per_second_per_core=float(np.median(cpu_rates)) if cpu_rates else None,
            input_samples_per_second_per_core=float(np.median(input_rates)) if input_rates else None,
        )
        if not measured:
            return base
        accelerators = [catalog.accelerators[k] for k in measured]  # type: ignore[attr-defined]
        steps = device_steps(profile, accelerators)
        predicted_rate = profile.batch_size / steps.seconds
        log_ratio = np.log(predicted_rate / np.array(list(measured.values())))  # = log(actual time / model)
        share = steps.memory_share
        tilt = 0.0
        if len(measured) >= 2 and np.ptp(share) > 0.05:
            tilt = float(np.clip(np.polyfit(share - share.mean(), log_ratio, 1)[0], -3.0, 3.0))
        return Calibration(
            workload_fingerprint=profile.workload_fingerprint,
            scale=float(math.exp(log_ratio.mean())),
            tilt=tilt,
            anchor_memory_share=float(share.mean()),
            measured_samples_per_second=measured,
            anchors=tuple(measured),
            cpu_samples_per_second_per_core=base.cpu_samples_per_second_per_core,
            input_samples_per_second_per_core=base.input_samples_per_second_per_core,
        )


def _same_workload(profile: Profile, m: Measurement) -> bool:
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
