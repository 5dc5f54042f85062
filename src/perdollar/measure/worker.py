"""The child process that runs one benchmark: ``python -m perdollar.measure.worker SPEC RESULT``.

Everything that can crash, hang or run out of memory happens here, so the parent only has to
watch a process. The child writes one JSON result file; a failure it can still catch becomes a
result with ``status`` oom/error, and the parent classifies the rest (killed, timed out).
"""

from __future__ import annotations

import collections
import json
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.measure.bench_records import BenchResult, BenchSpec
from perdollar.measure.result import Status
from perdollar.sandbox import mark_sandboxed, user_frame

if TYPE_CHECKING:
    import torch

    from perdollar.measure.loop import Coordinator, LoopSettings
    from perdollar.measure.modes import PreparedStep
    from perdollar.workload.spec import Workload

PROGRESS_PREFIX = "PERDOLLAR-PROGRESS"

_OOM_WORDS = (
    "out of memory",
    "can't allocate memory",
    "cannot allocate memory",
    "defaultcpuallocator",
    "memoryerror",
    "outofmemoryerror",
)


def classify_failure(text: str) -> Status:
    """``oom`` when an error text says memory ran out, else ``error``."""
    lowered = text.lower()
    return "oom" if any(word in lowered for word in _OOM_WORDS) else "error"


def failure_payload(error: BaseException) -> BenchResult:
    kind = type(error).__name__
    text = f"{kind}: {error}"
    status: Status = "oom" if isinstance(error, MemoryError) else classify_failure(text)
    where = user_frame(error)
    payload: BenchResult = {
        "status": status,
        "message": (text[:800] + (f" (at {where})" if where else "")),
        "traceback": "".join(traceback.format_exception(error))[-4000:],
    }
    if where:
        payload["where"] = where
    return payload


class _ProgressReporter:
    """Progress lines on stdout for the parent, at most a few per second."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s = interval_s
        self._last = 0.0

    def __call__(self, phase: str, fraction: float) -> None:
        now = time.monotonic()
        if now - self._last >= self.interval_s:
            self._last = now
            print(f"{PROGRESS_PREFIX} {phase} {min(max(fraction, 0.0), 1.0):.3f}", flush=True)


def _silent(phase: str, fraction: float) -> None:
    return None


def load_spec_workload(spec: BenchSpec) -> Workload:
    from perdollar.workload import load_workload

    return load_workload(
        spec["workload"],
        batch_size=spec.get("batch_size"),
        precision=spec.get("precision"),
        kind=spec.get("kind"),
    )


def loop_settings(spec: BenchSpec) -> LoopSettings:
    from perdollar.measure.loop import LoopSettings

    return LoopSettings(**spec.get("settings", {}))


def peak_memory_bytes(device: str, rss_peak: float | None) -> float | None:
    import torch

    if device.startswith("cuda"):
        return float(torch.cuda.max_memory_allocated())
    # ru_maxrss is kibibytes on Linux: the high-water mark even between sampler ticks.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
    return max(own, rss_peak or 0.0)


class _CudaEventSteps:
    """Times each step on the GPU's own clock with CUDA events.

    Host clocks between un-synchronised steps measure only kernel launches; events recorded on
    the stream give every step's device time without a synchronise per step.
    """

    def __init__(self, step: Callable[[], object]) -> None:
        import torch

        self._step = step
        self._event = torch.cuda.Event
        self.pairs: collections.deque[tuple[torch.cuda.Event, torch.cuda.Event]] = collections.deque(
            maxlen=200_000
        )

    def __call__(self) -> object:
        start, end = self._event(enable_timing=True), self._event(enable_timing=True)
        start.record()
        outcome = self._step()
        end.record()
        self.pairs.append((start, end))
        return outcome

    def last_step_times(self, count: int) -> list[float]:
        """Seconds per step for the last ``count`` steps (call after a synchronise)."""
        pairs = list(self.pairs)[-count:] if count else []
        return [start.elapsed_time(end) / 1e3 for start, end in pairs]


def _precision_warnings(prepared: PreparedStep, spec: BenchSpec, device: str) -> list[str]:
    # CPUs have no fast fp16 arithmetic: PyTorch emulates it, often ten times slower than fp32,
    # which says nothing about how the workload runs on an accelerator.
    workload = getattr(prepared.runner, "workload", None)
    precision = str(getattr(workload, "precision", None) or spec.get("precision") or "")
    if device == "cpu" and "fp16" in precision:
        return [
            f"{precision} is emulated on a CPU (much slower than fp32); for a CPU figure that "
            "calibrates predictions well, measure with --precision fp32 or amp-bf16"
        ]
    return []


def measure_prepared(
    prepared: PreparedStep,
    spec: BenchSpec,
    device: str,
    *,
    coordinator: Coordinator | None = None,
    report: bool = True,
) -> BenchResult:
    """Run the timing loop on a prepared step and describe the outcome as plain JSON data."""
    import torch

    from perdollar.measure import steady
    from perdollar.measure.loop import run_loop
    from perdollar.measure.system import SystemSampler

    on_gpu = device.startswith("cuda")
    step: Callable[[], object] = _CudaEventSteps(prepared.step) if on_gpu else prepared.step
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    with SystemSampler() as sampler:
        result = run_loop(
            step,
            samples_per_step=prepared.samples_per_step,
            sync=prepared.sync,
            settings=loop_settings(spec),
            progress=_ProgressReporter() if report and spec.get("progress", True) else _silent,
            coordinator=coordinator,
        )
    summary = result.summary()
    if isinstance(step, _CudaEventSteps):
        torch.cuda.synchronize()
        device_times = step.last_step_times(min(result.timed_steps, len(result.step_times)))
        summary = steady.summarize(result.block_rates, device_times, steady_reached=result.steady_reached)
    utilization = sampler.summary()
    # Energy per step from the boards' power over the run, where NVML reads it (GPU runs).
    from perdollar.measure.power import power_summary

    utilization.update(power_summary(sampler.power_trace, summary.step_time_ms.get("mean", 0.0) / 1e3))
    rss_peak = utilization.get("rss_peak_bytes")
    rss_peak_bytes = rss_peak if isinstance(rss_peak, int | float) else None
    host_ms = None
    # Single-process runs only: ranks of a data-parallel run would leave their collectives unmatched.
    if on_gpu and coordinator is None:
        from perdollar.measure.dispatch import host_dispatch_ms

        try:
            host_ms = host_dispatch_ms(prepared.step, summary.step_time_ms.get("p50", 0.0) / 1e3)
        except Exception:  # an optional figure: a build without the spin kernel still measures
            host_ms = None
    return {
        "status": "ok",
        "rate": asdict(summary.rate),
        "cv": summary.cv,
        "step_time_ms": summary.step_time_ms,
        "warnings": [
            *summary.warnings,
            *_precision_warnings(prepared, spec, device),
            *spec.get("extra_warnings", ()),
        ],
        "utilization": utilization,
        "peak_memory_bytes": peak_memory_bytes(device, rss_peak_bytes),
        "device": device,
        "warmup_steps": result.warmup_steps,
        "timed_steps": result.timed_steps,
        "blocks": len(result.block_rates),
        "elapsed_s": result.elapsed_s,
        "stop_reason": result.stop_reason,
        "torch_threads": torch.get_num_threads(),
        **({"host_dispatch_ms": host_ms} if host_ms is not None else {}),
    }


def run_spec(spec: BenchSpec, workload: Workload | None = None) -> BenchResult:
    """One benchmark as described by ``spec`` (see :func:`perdollar.measure.runner.make_spec`).

    ``workload`` is given when the child was forked with the Workload object already in memory.
    """
    import torch

    from perdollar.measure.modes import prepare, resolve_device

    if spec.get("nproc", 1) > 1 or spec.get("plan"):
        from perdollar.measure.distributed import run_ranks

        return run_ranks(spec, workload)
    if spec.get("threads"):
        torch.set_num_threads(int(spec["threads"]))
    workload = workload if workload is not None else load_spec_workload(spec)
    device = resolve_device(spec.get("device", "auto"))
    prepared = prepare(workload, spec["mode"], device)
    return measure_prepared(prepared, spec, device)


def _limit_memory(limit_bytes: int | None) -> None:
    if limit_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))


def run_and_write(spec: BenchSpec, result_path: Path, workload: Workload | None = None) -> int:
    try:
        _limit_memory(spec.get("memory_limit_bytes"))
        payload = run_spec(spec, workload)
    except BaseException as error:  # the workload's failure is the result, whatever it is
        payload = failure_payload(error)
    temporary = result_path.with_suffix(".partial")
    temporary.write_text(json.dumps(payload, allow_nan=True), encoding="utf-8")
    os.replace(temporary, result_path)
    sys.stdout.flush()
    return 0 if payload["status"] == "ok" else 1


def main(argv: list[str]) -> int:
    mark_sandboxed()
    spec_path, result_path = Path(argv[0]), Path(argv[1])
    return run_and_write(json.loads(spec_path.read_text(encoding="utf-8")), result_path)


FORK_THREAD_WARNING = (
    "measured with one CPU thread: an in-memory workload reaches the child by fork, where OpenMP "
    "cannot start threads again; pass path/file.py:function for a measurement with all threads"
)


def forked_main(spec: BenchSpec, result_path: str, workload: Workload) -> None:
    """Entry of a forked child that already holds the Workload object.

    OpenMP's thread pool does not survive a fork (the first parallel region of the child hangs
    if the parent ever ran one), so the forked child computes with one thread and says so.
    """
    import torch

    from perdollar.lifeline import die_with_parent

    die_with_parent(spec.get("parent_pid"))
    mark_sandboxed()
    torch.set_num_threads(1)
    code = run_and_write({**spec, "extra_warnings": [FORK_THREAD_WARNING]}, Path(result_path), workload)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    # os._exit skips interpreter teardown, which can hang on threads a workload left behind.
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
