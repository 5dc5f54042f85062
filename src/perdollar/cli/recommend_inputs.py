"""What ``recommend``, ``compare`` and ``sweep`` read beside their question: measurement files and
an optional local measurement, stored as they are taken. The question itself is built in
:mod:`perdollar.ask.building`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.ask import measurements_from_file
from perdollar.ask.inputs import measured_here
from perdollar.cli import common

if TYPE_CHECKING:
    from perdollar.measure.result import Measurement
    from perdollar.workload import Workload


def load_measurements(path: Path | None) -> list[Measurement]:
    return [] if path is None else measurements_from_file(path)


def measure_here(spec: Workload, json_output: bool, store_url: str | None, store: bool) -> list[Measurement]:
    from perdollar.cli.persist import save_measurement

    with common.progress(f"measuring {spec.name} on this machine", quiet=json_output):
        measurement = measured_here(spec)
    save_measurement(measurement, store_url=store_url, enabled=store)
    if not measurement.ok:
        common.err_console.print(
            f"local measurement {measurement.status}: {measurement.message}; predicting from specs",
            highlight=False,
        )
    return [measurement]
