"""Harness overhead: the same training step timed bare and through perdollar's harness.

Prints samples/s of (a) a bare loop timed with two clock reads, (b) the harness's timing loop
with its system-metrics thread in the same process, interleaved with (a) so machine noise hits
both alike, and (c) a full `run_benchmark` in a child process; then the ratios. Target: the
harness within 1% of the bare loop.

On a busy shared machine the step-to-step noise dwarfs 1%, so it also prints an estimate that
noise hardly touches: the harness's own cost per step (timing an empty step both ways, many
thousands of times) and the CPU its metrics thread burns, relative to the workload's step time.

    python benchmarks/harness_overhead.py [--workload mlp] [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch

from perdollar.measure.loop import LoopSettings, run_loop
from perdollar.measure.runner import run_benchmark
from perdollar.measure.system import SystemSampler
from perdollar.workload import load_workload
from perdollar.workload.step import build_step


def bare_rate(step: object, batch_size: int, seconds: float) -> float:
    run = step  # type: ignore[assignment]
    count = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        run()  # type: ignore[operator]
        count += 1
    return count * batch_size / (time.perf_counter() - started)


def harness_rate(step: object, batch_size: int, seconds: float) -> float:
    with SystemSampler():
        result = run_loop(
            step,
            samples_per_step=batch_size,  # type: ignore[arg-type]
            settings=LoopSettings(duration_s=seconds, target_precision=0.0),
        )
    return result.summary().rate.median


def per_step_overhead_s(seconds: float = 2.0) -> tuple[float, float]:
    """(bare, harness) seconds per empty step: the cost of the timing itself."""

    def empty() -> None:
        return None

    bare = 1 / bare_rate(empty, 1, seconds)
    settings = LoopSettings(duration_s=seconds, target_precision=0.0)
    result = run_loop(empty, samples_per_step=1, settings=settings)
    return bare, 1 / result.summary().rate.median


def sampler_cpu_share(seconds: float = 3.0) -> float:
    """CPU seconds the metrics thread uses per wall second while the main thread sleeps."""
    before = time.process_time()
    with SystemSampler():
        time.sleep(seconds)
    return (time.process_time() - before) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    workload = load_workload(args.workload)
    runner = build_step(workload, "cpu")
    batch = runner.make_batch()

    def step() -> object:
        return runner.run(batch)

    for _ in range(20):  # warm the allocator before either contender runs
        step()
    print(
        f"workload {workload.name}, batch {workload.batch_size}, torch threads {torch.get_num_threads()}, "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    bare, harness = [], []
    for round_index in range(args.rounds):
        pair = [("bare", bare_rate), ("harness", harness_rate)]
        if round_index % 2:
            pair.reverse()  # alternate the order so a trend in machine load does not favour one
        for name, measure in pair:
            rate = measure(step, workload.batch_size, args.seconds)
            (bare if name == "bare" else harness).append(rate)
            print(f"  round {round_index + 1} {name:8s} {rate:10.1f} samples/s")
    bare_median, harness_median = statistics.median(bare), statistics.median(harness)
    print(f"bare loop       {bare_median:10.1f} samples/s (median of {args.rounds})")
    print(f"harness loop    {harness_median:10.1f} samples/s (median of {args.rounds}, same process)")
    print(f"ratio harness/bare (in process): {harness_median / bare_median:.4f}")

    child = run_benchmark(args.workload, duration_s=max(args.seconds * 2, 10.0))
    if child.samples_per_second:
        median = child.samples_per_second.median
        print(
            f"perdollar bench {median:10.1f} samples/s (child process, CV {child.cv:.1%}, "
            f"{child.extra.get('torch_threads')} threads)"
        )
        print(f"ratio bench/bare (child process): {median / bare_median:.4f}")
    else:
        print(f"perdollar bench failed: {child.status} {child.message}")
    bare_empty, harness_empty = per_step_overhead_s()
    sampler = sampler_cpu_share()
    step_s = workload.batch_size / bare_median
    estimate = (harness_empty - bare_empty) / step_s + sampler / (os.cpu_count() or 1)
    print(
        f"timing cost per step: bare {bare_empty * 1e9:.0f} ns, harness {harness_empty * 1e9:.0f} ns; "
        f"metrics thread {sampler:.2%} of one core"
    )
    print(f"estimated harness overhead on a {step_s * 1e3:.2f} ms step: {estimate:.3%} (target < 1%)")
    print(f"load average after: {os.getloadavg()[0]:.1f} (other processes share this machine)")


if __name__ == "__main__":
    main()
