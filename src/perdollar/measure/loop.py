"""The timing loop: warm up until steady, then time blocks until the figure is tight.

Works on any ``step()`` callable, so the same loop times a training step, a forward pass or one
batch of an input pipeline. ``sync()`` waits for queued accelerator work before a clock is read
(a no-op on the CPU); it is called only at block edges so it does not serialise the steps.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from dataclasses import dataclass

from perdollar.measure import steady

MAX_KEPT_STEPS = 100_000


@dataclass(frozen=True, slots=True)
class LoopSettings:
    duration_s: float = 20.0  # the whole budget, warm-up included
    target_precision: float = 0.01  # CI half-width relative to the median that ends the run early
    min_blocks: int = 8
    block_seconds: float = 0.25  # aim for blocks at least this long so clock noise is negligible
    warmup_window: int = 5
    warmup_tolerance: float = steady.DEFAULT_TOLERANCE
    warmup_share: float = 0.4  # at most this share of the budget goes to warm-up
    min_warmup_steps: int = 3  # always discard the first steps (allocator, lazy init, autotuning)


@dataclass(frozen=True, slots=True)
class LoopResult:
    block_rates: tuple[float, ...]  # samples per second per timed block
    step_times: tuple[float, ...]  # seconds, the last MAX_KEPT_STEPS timed steps
    warmup_steps: int
    timed_steps: int
    steady_reached: bool
    elapsed_s: float
    stop_reason: str  # "tight", "duration"

    def summary(self) -> steady.SteadySummary:
        return steady.summarize(self.block_rates, self.step_times, steady_reached=self.steady_reached)


ProgressCallback = Callable[[str, float], None]  # (phase, fraction of the budget used)


class Coordinator:
    """Keeps data-parallel ranks in lockstep: every rank must run the same number of steps.

    The default is a single process, where a local decision is the decision.
    """

    def agree_stop(self, local_stop: bool) -> bool:
        return local_stop

    def share(self, value: int) -> int:
        """Rank 0's ``value``, on every rank."""
        return value


def _no_progress(phase: str, fraction: float) -> None:
    return None


def _window_for(step_times: list[float], settings: LoopSettings) -> int:
    """Steps per warm-up window: up to ``warmup_window``, fewer when steps are slow.

    A window need not last longer than two timed blocks, so a one-second step settles after a
    handful of steps instead of eighteen.
    """
    if not step_times:
        return settings.warmup_window
    typical = sorted(step_times[-5:])[len(step_times[-5:]) // 2]
    if typical <= 0:
        return settings.warmup_window
    return max(1, min(settings.warmup_window, round(2 * settings.block_seconds / typical)))


def _warm_up(
    step: Callable[[], object],
    sync: Callable[[], None],
    settings: LoopSettings,
    deadline: float,
    progress: ProgressCallback,
    started: float,
    coordinator: Coordinator,
    clock: Callable[[], float],
) -> tuple[list[float], bool]:
    times: list[float] = []
    while True:
        before = clock()
        step()
        sync()
        times.append(clock() - before)
        now = clock()
        progress("warm-up", (now - started) / settings.duration_s)
        settled = times[settings.min_warmup_steps :]
        window = _window_for(settled, settings)
        # Steady when the latest three windows agree: an early calm stretch followed by a
        # slide must not count.
        reached = (
            len(settled) >= 3 * window
            and steady.find_steady_start(
                settled[-3 * window :], window=window, tolerance=settings.warmup_tolerance
            )
            is not None
        )
        if coordinator.agree_stop(reached or now >= deadline):
            return times, reached


def run_loop(
    step: Callable[[], object],
    *,
    samples_per_step: float,
    sync: Callable[[], None] = lambda: None,
    settings: LoopSettings | None = None,
    progress: ProgressCallback = _no_progress,
    coordinator: Coordinator | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> LoopResult:
    """Time ``step`` to a steady figure of samples per second (see module docstring)."""
    settings = settings or LoopSettings()
    coordinator = coordinator or Coordinator()
    started = clock()
    end = started + settings.duration_s
    warmup_times, steady_reached = _warm_up(
        step,
        sync,
        settings,
        started + settings.duration_s * settings.warmup_share,
        progress,
        started,
        coordinator,
        clock,
    )
    recent = warmup_times[-settings.warmup_window :]
    typical = sorted(recent)[len(recent) // 2]
    steps_per_block = coordinator.share(max(1, round(settings.block_seconds / typical)) if typical > 0 else 1)

    block_rates: list[float] = []
    # Percentiles need recent steps, not all of them: a microsecond step would otherwise keep
    # millions of floats.
    step_times: collections.deque[float] = collections.deque(maxlen=MAX_KEPT_STEPS)
    timed_steps = 0
    stop_reason = "duration"
    while True:
        sync()
        block_start = previous = clock()
        for _ in range(steps_per_block):
            step()
            now = clock()
            step_times.append(now - previous)
            previous = now
        sync()
        block_end = clock()
        # Host timestamps between un-synchronised steps measure launch time on an accelerator, but
        # the last step absorbs the queue at the block's sync, so per-step figures still sum right.
        step_times[-1] += block_end - previous
        timed_steps += steps_per_block
        block_rates.append(samples_per_step * steps_per_block / (block_end - block_start))
        progress("measure", (block_end - started) / settings.duration_s)
        tight = steady.is_tight(block_rates, target=settings.target_precision, min_blocks=settings.min_blocks)
        # Stop when another block would overrun the budget, but always time at least one block.
        if coordinator.agree_stop(tight or block_end + (block_end - block_start) > end):
            stop_reason = "tight" if tight else "duration"
            break
    return LoopResult(
        block_rates=tuple(block_rates),
        step_times=tuple(step_times),
        warmup_steps=len(warmup_times),
        timed_steps=timed_steps,
        steady_reached=steady_reached,
        elapsed_s=clock() - started,
        stop_reason=stop_reason,
    )
