"""What running the user's workload file in child processes costs, in wall time per command.

    python3 benchmarks/isolation_overhead.py [--src PATH_TO_A_CHECKOUT/src] [--repeats 3]

A workload file is written to a temporary folder and `perdollar profile FILE` and
`perdollar predict FILE --instance g5.xlarge` are timed end to end (interpreter start included),
median of the repeats. Point --src at another checkout's src/ to time that version the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKLOAD = """
import torch
from perdollar.workload import Workload

def build():
    return Workload(name="overhead-probe",
                    model_factory=lambda: torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(),
                                                              torch.nn.Linear(2048, 10)),
                    input_factory=lambda batch, device: torch.randn(batch, 512, device=device),
                    loss_fn=lambda out, batch: out.sum(), batch_size=64)
"""


def _timed(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "perdollar", *args], capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"perdollar {' '.join(args)} failed: {done.stderr[-500:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[1] / "src")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        spec = str(Path(folder, "probe.py")) + ":build"
        Path(folder, "probe.py").write_text(WORKLOAD)
        env = {**os.environ, "PYTHONPATH": str(args.src.resolve()), "PERDOLLAR_HOME": folder}
        for command in (["profile", spec], ["predict", spec, "--instance", "g5.xlarge"]):
            times = [_timed(command, env) for _ in range(args.repeats)]
            print(
                f"perdollar {command[0]:<8} median {statistics.median(times):5.2f} s  "
                f"(min {min(times):.2f} … max {max(times):.2f} s, {args.repeats} runs) with {args.src}"
            )


if __name__ == "__main__":
    main()
