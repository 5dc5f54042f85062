"""A measurement: immutable, serialisable, and honest about its spread."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

# killed: ended by a signal other than the out-of-memory killer's (a segfault in native code, say)
Status = Literal["ok", "oom", "error", "timeout", "killed"]
Mode = Literal["full", "cached-input", "data-only", "command", "inference"]


@dataclass(frozen=True, slots=True)
class Rate:
    """Samples per second: the median of timed blocks and a confidence interval around it."""

    median: float
    low: float
    high: float
    iqr: float = 0.0

    @property
    def relative_half_width(self) -> float:
        return (self.high - self.low) / (2 * self.median) if self.median else float("inf")


@dataclass(frozen=True, slots=True)
class HostFingerprint:
    cpu_model: str
    cpu_cores: int  # logical cores visible to the process
    memory_gib: float
    accelerator: str | None  # e.g. "NVIDIA H100 80GB HBM3"; None on a CPU host
    accelerator_key: str | None  # mapped into the catalog's accelerator table where possible
    accelerator_count: int
    driver: str | None
    instance_type: str  # from the cloud metadata service, or "unknown"
    cloud: str | None
    versions: dict[str, str] = field(default_factory=dict)  # python, torch, cuda, perdollar…


@dataclass(frozen=True, slots=True)
class Measurement:
    """One benchmark of one workload on one host, in one mode."""

    status: Status
    mode: Mode
    workload_name: str
    workload_fingerprint: str
    batch_size: int
    precision: str
    host: HostFingerprint
    started_at: str  # ISO-8601 UTC
    samples_per_second: Rate | None = None  # global (all processes) for --nproc runs
    cv: float | None = None  # coefficient of variation of block rates
    step_time_ms: dict[str, float] = field(default_factory=dict)  # p10, p50, p90, p99, mean
    utilization: dict[str, Any] = field(default_factory=dict)  # cpu %, gpu %, power W …
    peak_memory_bytes: float | None = None
    mfu: float | None = None
    nproc: int = 1
    scaling_efficiency: float | None = None
    warnings: tuple[str, ...] = ()
    message: str = ""  # the reason when status is not ok
    duration_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"
