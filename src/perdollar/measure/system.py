"""System metrics sampled in a background thread while a benchmark runs.

CPU utilisation per core and resident memory from psutil; on NVIDIA GPUs utilisation, memory,
power and SM clock through NVML when ``nvidia-ml-py`` is importable. The thread wakes a few times
a second and does a handful of cheap reads, so it costs the measured loop well under 1%.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from typing import Any

import psutil

from perdollar.measure.power import PowerRecorder, PowerTrace


class _Nvml:
    """The GPUs through NVML, or nothing when NVML or a GPU is absent."""

    def __init__(self) -> None:
        self.handles: list[Any] = []
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # no driver, no library, no GPU: all mean "no GPU metrics"
            self.handles = []

    def read(self) -> list[dict[str, float]]:
        readings = []
        for handle in self.handles:
            nvml = self._nvml
            try:
                rates = nvml.nvmlDeviceGetUtilizationRates(handle)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                readings.append(
                    {
                        "gpu_percent": float(rates.gpu),
                        "memory_used_bytes": float(memory.used),
                        "power_w": nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                        "sm_clock_mhz": float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
                    }
                )
            except Exception:  # a counter unsupported on this board: skip the reading
                continue
        return readings


class SystemSampler:
    """Use as a context manager around the measured loop; read :meth:`summary` afterwards."""

    def __init__(self, interval_s: float = 0.25) -> None:
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perdollar-system-sampler", daemon=True)
        self._process = psutil.Process()
        self._cpu: list[list[float]] = []
        self._rss: list[float] = []
        self._gpu: list[list[dict[str, float]]] = []
        self._nvml: _Nvml | None = None
        self._power: PowerRecorder | None = None

    def __enter__(self) -> SystemSampler:
        self._nvml = _Nvml()
        if self._nvml.handles:
            self._power = PowerRecorder(self._nvml._nvml, self._nvml.handles)
            self._power.record(time.monotonic())
        psutil.cpu_percent(percpu=True)  # primes the counters: the first call always reads 0
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._cpu.append(psutil.cpu_percent(percpu=True))
            with contextlib.suppress(psutil.Error):
                self._rss.append(float(self._process.memory_info().rss))
            if self._nvml and self._nvml.handles:
                self._gpu.append(self._nvml.read())
            if self._power is not None:
                self._power.record(time.monotonic())

    @property
    def power_trace(self) -> PowerTrace:
        """The boards' summed power over the run (empty without NVML or a GPU)."""
        return self._power.trace if self._power is not None else PowerTrace()

    def summary(self) -> dict[str, float | list[float]]:
        """Means over the run (peaks for memory), in named units."""
        result: dict[str, float | list[float]] = {"samples": len(self._cpu)}
        if self._cpu:
            per_core = [statistics.fmean(core) for core in zip(*self._cpu, strict=False)]
            result["cpu_percent_per_core"] = [round(value, 1) for value in per_core]
            result["cpu_percent"] = round(statistics.fmean(per_core), 1)
        if self._rss:
            result["rss_peak_bytes"] = max(self._rss)
        readings = [device for sample in self._gpu for device in sample]
        if readings:
            for key in ("gpu_percent", "power_w", "sm_clock_mhz"):
                result[key] = round(statistics.fmean(reading[key] for reading in readings), 1)
            result["gpu_memory_used_peak_bytes"] = max(reading["memory_used_bytes"] for reading in readings)
        return result
