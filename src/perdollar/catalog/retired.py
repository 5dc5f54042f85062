"""Machines that are retired, by the cloud or by the software stack: the package's
``retired_machines.csv``, one row per machine or family (an ``fnmatch`` pattern), each with its source.

A retired machine stays in the catalog, so that ``catalog`` and ``--show-excluded`` can say why it is
gone, but it carries an ``excluded_reason`` and is never ranked. A cloud retires a size on a date
(Azure's NCv3 V100 sizes); a chip is retired when CUDA drops its architecture, since no current
training framework then builds for it (Kepler's K80 and K520).
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

RETIRED_MACHINES = Path(__file__).with_name("retired_machines.csv")
COLUMNS = ("cloud", "instance_pattern", "retired_on", "excluded_reason", "source")


@dataclass(frozen=True, slots=True)
class RetiredMachine:
    """The machines of ``cloud`` whose name matches ``instance_pattern``, and why they are retired."""

    cloud: str
    instance_pattern: str
    retired_on: dt.date | None  # None where the retirement is a software release, not a cloud's date
    excluded_reason: str
    source: str

    def retires(self, cloud: str, instance_type: str) -> bool:
        return cloud == self.cloud and fnmatch.fnmatchcase(instance_type, self.instance_pattern)


def read_retired_machines(path: Path = RETIRED_MACHINES) -> tuple[RetiredMachine, ...]:
    """Every row of the table, checked; a ValueError names the row and the cell that is wrong."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path.name}: the header is not {','.join(COLUMNS)}")
        rows = []
        for number, row in enumerate(reader, start=2):
            where = f"{path.name} row {number}"
            empty = [c for c in COLUMNS if c != "retired_on" and not (row.get(c) or "").strip()]
            if empty:
                raise ValueError(f"{where}: {', '.join(empty)} empty")
            if not row["excluded_reason"].startswith("retired: "):
                raise ValueError(f"{where}: excluded_reason does not start with 'retired: '")
            day = row["retired_on"].strip()
            try:
                retired_on = dt.date.fromisoformat(day) if day else None
            except ValueError:
                raise ValueError(f"{where}: retired_on {day!r} is not a date (YYYY-MM-DD)") from None
            rows.append(
                RetiredMachine(
                    cloud=row["cloud"].strip(),
                    instance_pattern=row["instance_pattern"].strip(),
                    retired_on=retired_on,
                    excluded_reason=row["excluded_reason"].strip(),
                    source=row["source"].strip(),
                )
            )
    return tuple(rows)


def with_retired_machines(
    instance_types: pd.DataFrame, retired: tuple[RetiredMachine, ...] | None = None
) -> pd.DataFrame:
    """``instance_types`` with each retired machine's ``excluded_reason`` set (a reason already
    there, such as a desktop-only slice, is kept: it says more about the machine)."""
    rows = read_retired_machines() if retired is None else retired
    frame = instance_types.copy()
    if "excluded_reason" not in frame:
        frame["excluded_reason"] = ""
    reasons = []
    for cloud, name, reason in zip(frame["cloud"], frame["name"], frame["excluded_reason"], strict=True):
        match = next((r for r in rows if r.retires(str(cloud), str(name))), None)
        reasons.append(reason if reason or match is None else match.excluded_reason)
    frame["excluded_reason"] = reasons
    return frame


def retired_sources(
    instance_types: pd.DataFrame, retired: tuple[RetiredMachine, ...] | None = None
) -> dict[str, str]:
    """Per retired machine of ``instance_types`` (``cloud:name``): the source of its retirement."""
    rows = read_retired_machines() if retired is None else retired
    found = {}
    for cloud, name in zip(instance_types["cloud"], instance_types["name"], strict=True):
        match = next((r for r in rows if r.retires(str(cloud), str(name))), None)
        if match is not None:
            on = f"retired {match.retired_on}; " if match.retired_on else ""
            found[f"{cloud}:{name}"] = f"{on}{match.source}"
    return found
