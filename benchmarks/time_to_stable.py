"""Time to a stable reading: how long `run_benchmark` takes to reach its tight figure.

For each workload at a small batch: the wall time of the whole run (child start, model build,
warm-up, timed blocks), the timing loop's own share, warm-up steps, and why it stopped
("tight": the 95% CI of the median within 1%; "duration": the budget ran out first).

    python benchmarks/time_to_stable.py [--budget 60] [mlp:64 resnet50:8 ...]
"""

from __future__ import annotations

import argparse
import os

from perdollar.measure.runner import run_benchmark


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("targets", nargs="*", default=["mlp:64", "resnet50:8"])
    parser.add_argument("--budget", type=float, default=60.0, help="seconds allowed per run")
    args = parser.parse_args()
    for target in args.targets:
        name, _, batch = target.partition(":")
        measurement = run_benchmark(name, batch_size=int(batch) if batch else None, duration_s=args.budget)
        extra = measurement.extra
        rate = measurement.samples_per_second
        figure = (
            f"{rate.median:.1f} samples/s (95% CI {rate.low:.1f}–{rate.high:.1f})"
            if rate
            else f"{measurement.status}: {measurement.message}"
        )
        print(
            f"{name} batch {measurement.batch_size}: {measurement.duration_s:.1f} s wall, "
            f"loop {extra.get('elapsed_s', float('nan')):.1f} s, "
            f"{extra.get('warmup_steps')} warm-up steps, "
            f"{extra.get('timed_steps')} timed steps in {extra.get('blocks')} blocks, "
            f"stopped: {extra.get('stop_reason')}; {figure}; load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
