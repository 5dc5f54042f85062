"""The profile's memory estimate against the real peak memory of a training step.

For each workload and batch size: the estimate (weights + gradients + optimizer state +
activations + workspace, traced on fake tensors) and the peak measured in a fresh process —
``torch.cuda.max_memory_allocated`` on a GPU, the rise of the resident set on a CPU (see
perdollar.profile.check) — and the relative error of the estimate.

Run: python benchmarks/memory_estimate_check.py [--device cpu|cuda] [--precision fp32]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys

import torch

from perdollar.fmt import format_bytes
from perdollar.profile import profile_workload
from perdollar.profile.check import measurement_environment
from perdollar.workload import load_workload

CASES = (("mlp", 64), ("mlp", 1024), ("resnet50", 2), ("resnet50", 8), ("bert-base", 1), ("bert-base", 4))

CHILD = """
import torch
torch.set_num_threads(1)
from perdollar.profile.check import measure_peak_step_bytes
from perdollar.workload import load_workload
workload = load_workload({name!r}, batch_size={batch}, precision={precision!r})
print(measure_peak_step_bytes(workload, {device!r}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--precision", default="fp32")
    options = parser.parse_args()
    print(
        f"device {options.device} · precision {options.precision} · host {platform.machine()}, "
        f"{os.cpu_count()} cores · torch {torch.__version__}"
    )
    print(
        f"{'workload':<10} {'batch':>6} {'estimate':>11} {'measured':>11} {'error':>8}"
        "   parts of the estimate"
    )
    errors = []
    for name, batch in CASES:
        memory = profile_workload(load_workload(name, batch_size=batch, precision=options.precision)).memory
        code = CHILD.format(name=name, batch=batch, precision=options.precision, device=options.device)
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=False,
            env=measurement_environment(),
        )
        if done.returncode != 0:
            print(f"{name:<10} {batch:>6} measurement failed: {done.stderr.strip().splitlines()[-1]}")
            continue
        measured = float(done.stdout.strip().splitlines()[-1])
        error = (memory.total - measured) / measured
        errors.append(abs(error))
        parts = (
            f"weights {format_bytes(memory.weights)}, gradients {format_bytes(memory.gradients)}, "
            f"optimizer {format_bytes(memory.optimizer_state)}, activations "
            f"{format_bytes(memory.activations)}, workspace {format_bytes(memory.workspace)}"
        )
        print(
            f"{name:<10} {batch:>6} {format_bytes(memory.total):>11} {format_bytes(measured):>11} "
            f"{error:>+8.1%}   {parts}"
        )
    if errors:
        print(
            f"mean absolute error {sum(errors) / len(errors):.1%}, worst {max(errors):.1%} "
            f"over {len(errors)} cases"
        )


if __name__ == "__main__":
    main()
