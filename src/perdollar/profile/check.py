"""Measure the real peak memory of a step, to check the profile's memory estimate against it.

On a GPU the figure is ``torch.cuda.max_memory_allocated``. On a CPU there are no allocator
statistics, so it is the rise of the process's resident set (Linux ``VmHWM``, reset just before
the step) over a baseline taken after a warm-up step at batch 1 has paged in the kernels'
code and been freed. Run it in a fresh process (with :func:`measurement_environment`): the
baseline assumes nothing else is live.
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import gc
import os
from pathlib import Path

import torch

from perdollar.workload.spec import Workload
from perdollar.workload.step import build_step

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def measurement_environment() -> dict[str, str]:
    """Environment for the measuring process: glibc serves every large block with mmap.

    By default glibc raises its mmap threshold after the first large free and then keeps freed
    blocks in the heap, so the resident set stays at its high-water mark and overstates what
    was live at once. A fixed threshold returns each freed tensor to the system at once.
    """
    return {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}


def _status_bytes(field: str) -> int:
    for line in _STATUS.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"{field} missing from {_STATUS}")


def _release_freed_memory() -> None:
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: freed pages may stay resident
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def measure_peak_step_bytes(workload: Workload, device: str = "cpu", steps: int = 2) -> float:
    """Peak bytes a real step of ``workload`` holds on ``device`` (model, optimizer state and all)."""
    warm = build_step(dataclasses.replace(workload, batch_size=1), device, foreach=True)
    warm_batch = warm.make_batch()
    warm.run(warm_batch)
    del warm, warm_batch
    _release_freed_memory()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        baseline = torch.cuda.memory_allocated()
    else:
        if not _STATUS.exists():
            raise RuntimeError("measuring CPU peak memory needs Linux /proc")
        baseline = _status_bytes("VmRSS")
        _CLEAR_REFS.write_text("5")  # resets the peak resident set (VmHWM) to the current one
    # Multi-tensor optimizer kernels, as the profile traces them (and as PyTorch picks on GPUs).
    runner = build_step(workload, device, foreach=True)
    batch = runner.make_batch()
    for _ in range(steps):
        runner.run(batch)
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        return float(torch.cuda.max_memory_allocated() - baseline)
    return float(_status_bytes("VmHWM") - baseline)
