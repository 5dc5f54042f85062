"""How the host's dispatch time of a step reads, by three methods, against the step on the GPU.

    python3 benchmarks/gpu_dispatch_check.py

For a few reference workloads at batch sizes where the host sets the pace and where it nearly
does: the median step run back to back (CUDA events), the CPU time of one call right after a
synchronise, and the CPU time of one call enqueued behind a spin kernel that keeps the GPU busy
(``perdollar.measure.dispatch``), with 0, 1 or 2 untimed calls ahead of it ("None": the call
waited on the GPU, e.g. a full launch queue). Needs a CUDA GPU.
"""

from __future__ import annotations

import statistics
import time

import torch

from gpu_kernel_times import timed_steps  # this folder: the same step timing
from perdollar.measure.dispatch import _timed_behind_hold
from perdollar.workload import load_workload
from perdollar.workload.step import build_step

POINTS = (
    ("mlp", None, None, "train"),
    ("vit-b16", 4, "amp-bf16", "train"),
    ("resnet50", 1, None, "inference"),
    ("bert-base", 1, None, "inference"),
    ("vit-b16", 8, None, "inference"),
    ("resnet50", 64, None, "inference"),
)


def main() -> int:
    for name, batch, precision, kind in POINTS:
        options = {key: value for key, value in (("batch_size", batch), ("precision", precision)) if value}
        workload = (
            load_workload(name, kind=kind, **options)
            if kind == "inference"
            else load_workload(name, **options)
        )
        runner = build_step(workload, "cuda")
        inputs = runner.make_batch()

        def step(runner=runner, inputs=inputs) -> object:
            return runner.run(inputs)

        step_ms = timed_steps(runner, inputs, 30)
        after_sync = []
        for _ in range(10):
            torch.cuda.synchronize()
            started = time.perf_counter()
            step()
            after_sync.append((time.perf_counter() - started) * 1e3)
        torch.cuda.synchronize()
        held = {warm: _timed_behind_hold(step, step_ms / 1e3, warm) for warm in (0, 1, 2)}
        shown = "  ".join(
            f"{warm} ahead {value:.2f}" if value else f"{warm} ahead None" for warm, value in held.items()
        )
        print(
            f"{name} batch {workload.batch_size} {kind}: step {step_ms:.2f} ms; host after a synchronise "
            f"{statistics.median(after_sync):.2f} ms; behind a hold: {shown} ms",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
