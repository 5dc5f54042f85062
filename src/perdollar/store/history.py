"""Rows of the store as lines of `perdollar history`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """One line of `perdollar history`: a stored measurement or recommendation."""

    kind: str  # measurement | recommendation
    id: str
    at: str  # ISO-8601 UTC: when measured / when recommended
    workload_name: str
    workload_fingerprint: str
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


def measurement_entry(row: Any) -> HistoryEntry:
    rate = "" if row.samples_per_second is None else f"{row.samples_per_second:.4g} samples/s"
    where = row.host_accelerator or row.host_instance_type
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
            "host": row.host_instance_type,
            "accelerator": row.host_accelerator,
            "batch_size": row.batch_size,
            "precision": row.precision,
            "source": row.source,
            "stored_at": row.stored_at,
        },
    )


def recommendation_entry(row: Any) -> HistoryEntry:
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
