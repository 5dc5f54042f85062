"""Cost of summarising a command's throughput readings, at 10^3 to 10^6 readings.

Prints, for each count, the seconds that warm-up detection plus the summary (median, its 95%
confidence interval, IQR, CV, warnings) take, and the peak memory of collecting that many
readings the way `perdollar bench -- CMD` does (kept readings are thinned past a bound).
The cost should grow as n log n: about ten times per decade, not a hundred.

    python benchmarks/median_interval_cost.py [--largest 1000000]
"""

from __future__ import annotations

import argparse
import random
import time
import tracemalloc

from perdollar.measure import steady
from perdollar.measure.command import _Capture, steady_readings


def summary_seconds(readings: list[float]) -> float:
    started = time.perf_counter()
    values, reached = steady_readings(readings)
    steady.summarize(values, [], steady_reached=reached)
    return time.perf_counter() - started


def collection_peak_mib(count: int) -> tuple[float, int]:
    tracemalloc.start()
    capture = _Capture([], [])
    for index in range(count):
        capture.add(100.0 + (index % 7) * 0.01)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, len(capture.readings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--largest", type=int, default=10**6)
    args = parser.parse_args()
    generator = random.Random(7)
    print(f"{'readings':>10} {'summary s':>10} {'s per 1e3':>10} {'kept':>8} {'peak MiB':>9}")
    count = 1000
    while count <= args.largest:
        readings = [100.0 * (1 + 0.02 * generator.gauss(0, 1)) for _ in range(count)]
        seconds = summary_seconds(readings)
        peak, kept = collection_peak_mib(count)
        print(f"{count:>10,} {seconds:>10.3f} {seconds / count * 1e3:>10.4f} {kept:>8,} {peak:>9.1f}")
        count *= 10


if __name__ == "__main__":
    main()
