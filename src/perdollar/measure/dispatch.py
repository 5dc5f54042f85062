"""How long the host takes to enqueue one step on a GPU, with the GPU kept busy meanwhile.

A step runs as fast as the slower of two things: the GPU's kernels, and the CPU's work of
enqueuing them (Python, the framework's dispatch, the launches). On a fast GPU at a small batch
the CPU is the limit, and a faster GPU would not help. To see the CPU's share alone, the GPU is
first held by a spin kernel longer than a step; the step is then enqueued behind it, so the CPU
never waits on the GPU, and the time its call takes is the dispatch time. If the GPU's hold
ended before the call returned, the step waited on the GPU somewhere (a value read back, as the
fp16 loss scaler's overflow check does, or a full launch queue): no dispatch time is recorded.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

_CALIBRATION_CYCLES = 10_000_000
_MIN_HOLD_S = 0.05
# A step this long is bound by its device (5,000 kernels at 50 µs each enqueue in 0.25 s), and
# holding the GPU for several of them would cost the run minutes.
_LONGEST_STEP_S = 0.5


def _spin_cycles_per_second() -> float:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.cuda._sleep(_CALIBRATION_CYCLES)
    end.record()
    end.synchronize()
    return _CALIBRATION_CYCLES / max(start.elapsed_time(end) / 1e3, 1e-6)


def host_dispatch_ms(step: Callable[[], object], step_seconds: float) -> float | None:
    """Median milliseconds of CPU time to enqueue one step; None if the step waits on the GPU or
    takes longer than half a second.

    A CPU that has just waited on the GPU runs its next call slower than it runs back-to-back
    steps (benchmarks/gpu_dispatch_check.py on an H100's host: the mlp's 1.19 ms step took
    1.67 ms to enqueue cold and 1.24 ms after one untimed step), so one step goes ahead untimed;
    where two steps overflow the launch queue, the cold figure is taken.
    """
    if step_seconds > _LONGEST_STEP_S:
        return None
    for warm_calls in (1, 0):
        milliseconds = _timed_behind_hold(step, step_seconds, warm_calls)
        if milliseconds is not None:
            return milliseconds
    return None


def _timed_behind_hold(
    step: Callable[[], object], step_seconds: float, warm_calls: int, repeats: int = 5
) -> float | None:
    import torch

    hold_cycles = int(_spin_cycles_per_second() * max(_MIN_HOLD_S, (3.0 + warm_calls) * step_seconds))
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        torch.cuda._sleep(hold_cycles)
        held = torch.cuda.Event()
        held.record()
        for _ in range(warm_calls):
            step()
        started = time.perf_counter()
        step()
        elapsed = time.perf_counter() - started
        waited = held.query()  # the hold is over: the call outlasted it, so it may have waited
        torch.cuda.synchronize()
        if waited:
            return None
        times.append(elapsed)
    return statistics.median(times) * 1e3
