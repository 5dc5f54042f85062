"""How long the host takes to dispatch a step, against how long the GPU takes to run it.

    python3 benchmarks/gpu_host_floor.py OUT.csv [--points resnet50/inference/1,...] [--steps 20]

For each point (a reference workload, inference at a batch size, or training at its default):
- ``step_ms``: median time of one step run back to back with the next, by CUDA events (what a
  throughput measurement sees);
- ``host_ms``: median CPU time of one call of the step, the GPU idle before it (the framework's
  dispatch: Python, autocast, operator dispatch and kernel launches; a step that waits on the
  GPU inside, such as the fp16 loss scaler's overflow check, includes that wait);
- ``device_ms`` and ``kernels``: total duration and count of the GPU kernels of one step
  (torch.profiler, three steps).
The prediction models the step as a soft maximum of device and host time
(``perdollar.predict.calibration.with_host_floor``); ``benchmarks/host_floor_check.py`` sets these
rows against it.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import torch

from gpu_kernel_times import timed_steps  # this folder: the same step timing
from perdollar.workload import load_workload
from perdollar.workload.step import build_step

PROFILED_STEPS = 3
COLUMNS = ("workload", "kind", "batch_size", "precision", "step_ms", "host_ms", "device_ms", "kernels")
INFERENCE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
DEFAULT_POINTS = ",".join(
    [
        f"{name}/inference/{batch}"
        for name in ("resnet50", "bert-base", "vit-b16")
        for batch in INFERENCE_BATCHES
    ]
    + [f"gpt2/inference/{batch}" for batch in INFERENCE_BATCHES[:7]]
    + ["mlp", "ncf", "resnet50", "bert-base"]
)


def host_ms(runner, batch, steps: int) -> float:
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        started = time.perf_counter()
        runner.run(batch)
        times.append((time.perf_counter() - started) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def kernel_time(runner, batch) -> tuple[float, float]:
    """(device milliseconds, kernels) per step: the GPU kernels' total duration and count."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED_STEPS):
            runner.run(batch)
        torch.cuda.synchronize()
    kernels = [event for event in prof.events() if event.device_type == DeviceType.CUDA]
    total_us = sum(event.time_range.elapsed_us() for event in kernels)
    return total_us / 1e3 / PROFILED_STEPS, len(kernels) / PROFILED_STEPS


def measure(point: str, steps: int) -> dict:
    name, _, batch_text = point.partition("/inference/")
    if batch_text:
        workload = load_workload(name, batch_size=int(batch_text), kind="inference")
    else:
        workload = load_workload(name)
    runner = build_step(workload, "cuda")
    batch = runner.make_batch()
    row = {
        "workload": name,
        "kind": workload.kind,
        "batch_size": workload.batch_size,
        "precision": workload.precision,
        "step_ms": timed_steps(runner, batch, steps),
        "host_ms": host_ms(runner, batch, steps),
    }
    row["device_ms"], row["kernels"] = kernel_time(runner, batch)
    del runner, batch
    torch.cuda.empty_cache()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--points", default=DEFAULT_POINTS)
    parser.add_argument("--steps", type=int, default=20)
    options = parser.parse_args()
    rows = []
    for point in options.points.split(","):
        try:
            row = measure(point, options.steps)
        except Exception as error:  # one point's failure is a row, not the end of the run
            row = {"workload": point, "error": repr(error)[:300]}
        rows.append(row)
        print(row, flush=True)
        with options.out.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=[*COLUMNS, "error"])
            writer.writeheader()
            writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
