"""Energy from NVML power readings: a time series of board power, integrated over the run.

NVML reports each board's draw in milliwatts; the sampler sums the boards at each reading and keeps
(time, watts). Energy is the trapezoid integral of that series; per step it is the run's mean
power times the step time, so warm-up readings at the edges weigh no more than their duration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class PowerTrace:
    """Readings of all boards' power together: seconds (any origin) and watts."""

    times_s: tuple[float, ...] = ()
    watts: tuple[float, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.times_s[-1] - self.times_s[0] if len(self.times_s) > 1 else 0.0


def energy_joules(trace: PowerTrace) -> float:
    """∫ P dt over the trace by trapezoids (0 with fewer than two readings)."""
    pairs = zip(trace.times_s, trace.times_s[1:], trace.watts, trace.watts[1:], strict=False)
    return sum((t1 - t0) * (w0 + w1) / 2.0 for t0, t1, w0, w1 in pairs)


def mean_watts(trace: PowerTrace) -> float | None:
    """Time-weighted mean power; a single reading stands for itself; None without readings."""
    if not trace.watts:
        return None
    if trace.duration_s <= 0:
        return trace.watts[0]
    return energy_joules(trace) / trace.duration_s


def energy_per_step_joules(trace: PowerTrace, step_time_s: float) -> float | None:
    power = mean_watts(trace)
    return None if power is None or step_time_s <= 0 else power * step_time_s


@dataclass
class PowerRecorder:
    """Reads every board's power through an NVML module and keeps the summed series."""

    nvml: Any
    handles: Sequence[Any]
    _times: list[float] = field(default_factory=list)
    _watts: list[float] = field(default_factory=list)

    def record(self, now: float) -> None:
        try:
            total_mw = sum(float(self.nvml.nvmlDeviceGetPowerUsage(h)) for h in self.handles)
        except Exception:  # a board that does not report power: no reading, not a failed run
            return
        self._times.append(now)
        self._watts.append(total_mw / 1000.0)

    @property
    def trace(self) -> PowerTrace:
        return PowerTrace(tuple(self._times), tuple(self._watts))


def power_summary(trace: PowerTrace, step_time_s: float | None) -> dict[str, float]:
    """What a measurement stores: energy and mean power of the run, and energy per step."""
    power = mean_watts(trace)
    if power is None:
        return {}
    out = {"energy_j": round(energy_joules(trace), 3), "mean_power_w": round(power, 2)}
    per_step = energy_per_step_joules(trace, step_time_s or 0.0)
    if per_step is not None:
        out["energy_per_step_j"] = round(per_step, 4)
    return out
