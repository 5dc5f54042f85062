"""Where a reference workload's GPU time goes, operator by operator, to check the model's breakdown.

    python3 benchmarks/gpu_kernel_times.py OUT_DIR [--workloads resnet50,vit-b16] [--steps 20]
    python3 benchmarks/gpu_kernel_times.py OUT_DIR --workloads resnet50/inference/1

For each workload: one training step is built as `perdollar bench` builds it, warmed up, timed
over --steps steps with CUDA events (median step time in ms), then profiled with torch.profiler
for three steps. Convolutional workloads are timed twice, with cuDNN's autotuner off (PyTorch's
default, what `perdollar bench` measures) and on (what published image-model runs use).
Written to OUT_DIR: step_times.csv (workload, cudnn_benchmark, median_step_ms, samples_per_s)
and op_times.csv (workload, aten operator, calls and device milliseconds per step).
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import torch

from perdollar.workload import load_workload
from perdollar.workload.step import build_step

CONVOLUTIONAL = {"resnet50", "resnet152", "vgg16", "inception-v3"}
PROFILED_STEPS = 3


def timed_steps(runner, batch, steps: int) -> float:
    """Median milliseconds of one step, timed by CUDA events around each step."""
    for _ in range(5):
        runner.run(batch)
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        runner.run(batch)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def op_times(runner, batch) -> list[tuple[str, int, float]]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(PROFILED_STEPS):
            runner.run(batch)
        torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        device_us = getattr(event, "self_device_time_total", None)
        if device_us is None:
            device_us = event.self_cuda_time_total
        if device_us > 0:
            rows.append((event.key, event.count // PROFILED_STEPS, device_us / 1e3 / PROFILED_STEPS))
    return sorted(rows, key=lambda row: -row[2])


def measure_one(name: str, steps: int, step_rows: list[dict], op_rows: list[dict]) -> None:
    # "resnet50/inference/1": the forward pass alone at that batch
    base, _, rest = name.partition("/inference/")
    workload = load_workload(base, batch_size=int(rest), kind="inference") if rest else load_workload(name)
    for autotune in (False, True) if base in CONVOLUTIONAL and not rest else (False,):
        torch.backends.cudnn.benchmark = autotune
        runner = build_step(workload, "cuda")
        batch = runner.make_batch()
        milliseconds = timed_steps(runner, batch, steps)
        step_rows.append(
            {
                "workload": name,
                "cudnn_benchmark": autotune,
                "batch_size": workload.batch_size,
                "median_step_ms": milliseconds,
                "samples_per_s": workload.batch_size / milliseconds * 1e3,
            }
        )
        print(step_rows[-1], flush=True)
        if not autotune:
            op_rows += [
                {"workload": name, "op": op, "calls_per_step": calls, "device_ms_per_step": ms}
                for op, calls, ms in op_times(runner, batch)
            ]
        del runner, batch
        torch.cuda.empty_cache()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--workloads",
        default="resnet50,inception-v3,vgg16,resnet152,vit-b16,bert-base,gpt2,gnmt,ncf,"
        "resnet50/inference/1,bert-base/inference/1,vit-b16/inference/256,bert-base/inference/256",
    )
    parser.add_argument("--steps", type=int, default=20)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    step_rows, op_rows = [], []
    for name in options.workloads.split(","):
        try:
            measure_one(name, options.steps, step_rows, op_rows)
        except Exception as error:  # one workload's failure is a row, not the end of the run
            step_rows.append(
                {
                    "workload": name,
                    "cudnn_benchmark": "",
                    "batch_size": "",
                    "median_step_ms": "",
                    "samples_per_s": "",
                    "error": repr(error)[:300],
                }
            )
            print(name, "failed:", repr(error)[:300], flush=True)
        for path, rows in (("step_times.csv", step_rows), ("op_times.csv", op_rows)):
            if not rows:
                continue
            with (options.out / path).open("w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=list(rows[0]), extrasaction="ignore")
                writer.writeheader()
                writer.writerows(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
