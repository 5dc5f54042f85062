"""Rows of the store as lines of `perdollar history`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import sqlalchemy as sa

from perdollar.measure.result import HostFingerprint
from perdollar.measure.text import host_label
from perdollar.store.codec import build


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of `perdollar history`: a stored measurement or recommendation."""

    kind: str  # measurement | recommendation
    id: str
    at: str  # ISO-8601 UTC: when measured / when recommended
    workload_name: str
    workload_fingerprint: str
    summary: str
    details: dict[str, object] = field(default_factory=dict)


# A row of the measurements or recommendations table, its columns read by name.
TableRow = sa.Row[tuple[object, ...]]


def rate_unit(row: TableRow) -> str:
    """The unit the measurement's rate is in: its own (``output tokens/s`` for a language model's
    endpoint), else samples/s."""
    try:
        utilization = json.loads(getattr(row, "payload", None) or "{}").get("utilization")
    except (ValueError, AttributeError):
        return "samples/s"
    unit = utilization.get("unit") if isinstance(utilization, dict) else None
    return unit if isinstance(unit, str) and unit.endswith("/s") and len(unit) < 40 else "samples/s"


def measured_on(row: TableRow) -> str:
    """The host a stored measurement ran on, named as `bench` named it when it printed the result."""
    try:
        host = json.loads(getattr(row, "payload", None) or "{}").get("host")
        return host_label(build(HostFingerprint, host))
    except (ValueError, TypeError, AttributeError):  # an old or damaged payload: the indexed columns
        return row.host_accelerator or row.host_instance_type


def measurement_entry(row: TableRow) -> HistoryEntry:
    unit = rate_unit(row)
    rate = "" if row.samples_per_second is None else f"{row.samples_per_second:.4g} {unit}"
    where = measured_on(row)
    summary = f"{row.mode} {row.status} {rate} on {where}, batch {row.batch_size} {row.precision}"
    return HistoryEntry(
        "measurement",
        row.id,
        row.started_at,
        row.workload_name,
        row.workload_fingerprint,
        " ".join(summary.split()),
        {
            "mode": row.mode,
            "status": row.status,
            "samples_per_second": row.samples_per_second,
            "rate_unit": unit,
            "host": row.host_instance_type,
            "measured_on": where,
            "accelerator": row.host_accelerator,
            "batch_size": row.batch_size,
            "precision": row.precision,
            "source": row.source,
            "stored_at": row.stored_at,
        },
    )


def recommendation_entry(row: TableRow) -> HistoryEntry:
    top = row.top_choice or "nothing feasible"
    summary = f"{row.objective}: {top} (catalog {row.catalog_captured_at[:10]})"
    return HistoryEntry(
        "recommendation",
        row.id,
        row.created_at,
        row.workload_name,
        row.workload_fingerprint,
        summary,
        {
            "kind": row.kind,
            "objective": row.objective,
            "top_choice": row.top_choice,
            "catalog_snapshot_id": row.catalog_snapshot_id,
            "catalog_captured_at": row.catalog_captured_at,
        },
    )
