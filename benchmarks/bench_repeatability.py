"""Repeatability: back-to-back `perdollar bench mlp` runs, and the CV of their medians.

Target on a 2-core machine: the medians agree within a CV of 3%.

    python benchmarks/bench_repeatability.py [--runs 3] [--workload mlp] [--duration 20]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PERDOLLAR = [sys.executable, "-c", "from perdollar.cli import main; main()"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workload", default="mlp")
    parser.add_argument("--duration", default="20")
    args = parser.parse_args()

    medians = []
    for run in range(args.runs):
        started = time.monotonic()
        completed = subprocess.run(
            [*PERDOLLAR, "bench", args.workload, "--json", "--no-store", "--duration", args.duration],
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.monotonic() - started
        if completed.returncode != 0:
            print(f"run {run + 1}: exit {completed.returncode}: {completed.stderr.strip()[-300:]}")
            continue
        document = json.loads(completed.stdout)
        rate = document["samples_per_second"]
        medians.append(rate["median"])
        print(
            f"run {run + 1}: {rate['median']:9.1f} samples/s (95% CI {rate['low']:.1f}–{rate['high']:.1f}, "
            f"block CV {document['cv']:.1%}, {document['extra']['blocks']} blocks, "
            f"stopped: {document['extra']['stop_reason']}, {wall:.0f} s wall, "
            f"load average {os.getloadavg()[0]:.1f})"
        )
    if len(medians) >= 2:
        cv = statistics.stdev(medians) / statistics.fmean(medians)
        print(
            f"medians {', '.join(f'{m:.1f}' for m in medians)} samples/s: CV across runs {cv:.2%} "
            f"(target < 3%)"
        )


if __name__ == "__main__":
    main()
