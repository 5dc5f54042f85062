"""How long loading the bundled catalog snapshot takes (the claim: well under a second).

    python benchmarks/catalog_load.py

Prints the median and spread of a cold read of the snapshot folder (parse + validate every
row), of building the offers DataFrame, and of one filtered listing.
"""

from __future__ import annotations

import statistics
import time

from perdollar import catalog
from perdollar.catalog.snapshot import read_snapshot


def _timed(label: str, action, repeats: int = 7) -> None:  # type: ignore[no-untyped-def]
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        action()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    # CPU time is reported too: on a shared machine the wall clock includes waiting for a core.
    print(f"{label:<40} wall median {statistics.median(wall) * 1000:6.1f} ms (min {min(wall) * 1000:.1f}), "
          f"CPU median {statistics.median(cpu) * 1000:6.1f} ms; n={repeats}")  # fmt: skip


def main() -> None:
    snapshot = read_snapshot(catalog.BUNDLED_SNAPSHOT)
    offers, types, chips = len(snapshot.offers), len(snapshot.instance_types), len(snapshot.accelerators)
    print(f"snapshot {snapshot.snapshot_id}: {offers} offers, {types} instance types, {chips} accelerators")
    _timed("read + validate snapshot", lambda: read_snapshot(catalog.BUNDLED_SNAPSHOT))
    _timed(
        "offers_frame() on a fresh catalog", lambda: read_snapshot(catalog.BUNDLED_SNAPSHOT).offers_frame()
    )
    _timed(
        "find(accelerator='a10g', cloud='aws')",
        lambda: catalog.find(snapshot, accelerator="a10g", cloud="aws"),
    )


if __name__ == "__main__":
    main()
