"""Terminal tables and JSON rows for the inference commands: latency curves, serving load
steps and ranked deployments."""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table

from perdollar.fmt import format_money


def format_ms(value: float) -> str:
    if value != value:
        return "–"
    if value == float("inf"):
        return "overload"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def curve_table(curve: Any) -> Table:
    table = Table(
        title=f"{escape(curve.workload_name)} latency curve on this machine "
        f"({curve.device}, {curve.precision}); "
        "latency in ms per request of one batch",
        title_justify="left",
    )
    for header in ("batch", "clients", "requests", "P50", "P90", "P95", "P99", "req/s", "samples/s"):
        table.add_column(header, justify="right")
    for p in curve.points:
        if p.status != "ok":
            table.add_row(str(p.batch_size), "–", "–", p.status, "", "", "", "", "")
            continue
        table.add_row(
            str(p.batch_size),
            str(p.concurrency),
            f"{p.requests:,}",
            format_ms(p.p50_ms),
            format_ms(p.p90_ms),
            format_ms(p.p95_ms),
            format_ms(p.p99_ms),
            f"{p.requests_per_second:,.0f}",
            f"{p.samples_per_second:,.0f}",
        )
    return table


def load_table(title: str, results: list[Any]) -> Table:
    table = Table(title=title, title_justify="left")
    for header in ("offered/s", "served/s", "requests", "errors", "P50", "P90", "P95", "P99", "max"):
        table.add_column(header, justify="right")
    for r in results:
        table.add_row(
            f"{r.offered_rps:,.4g}",
            f"{r.achieved_rps:,.4g}",
            f"{r.requests:,}",
            str(r.errors),
            format_ms(r.p50_ms),
            format_ms(r.p90_ms),
            format_ms(r.p95_ms),
            format_ms(r.p99_ms),
            format_ms(r.max_ms),
        )
    return table


def deployment_rows(frame: Any, top: int) -> list[dict[str, Any]]:
    keep = [
        "cloud",
        "instance_type",
        "region",
        "market",
        "accelerator_key",
        "accelerator_count",
        "instances",
        "spot_extra_instances",
        "replicas",
        "batch",
        "max_wait_ms",
        "latency_ms",
        "latency_high_ms",
        "capacity_per_replica",
        "rate_per_replica",
        "utilisation",
        "price_per_hour",
        "deployment_price_per_hour",
        "usd_per_million_requests",
        "usd_per_million_requests_high",
        "basis",
        "interruption_bucket",
        "captured_at",
    ]
    feasible = frame[frame["feasible"]].drop_duplicates(["cloud", "instance_type", "market"]).head(top)
    from perdollar.select.serving import deployment_label

    records = feasible.to_dict("records")
    return [{"label": deployment_label(row)} | {k: row.get(k) for k in keep} for row in records]


def excluded_rows(frame: Any) -> list[dict[str, Any]]:
    excluded = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    return [
        {
            "accelerator": row["accelerator_key"] or "(CPU)",
            "example_instance": row["instance_type"],
            "reason": row["excluded_reason"],
        }
        for row in excluded.to_dict("records")
    ]


def deployment_table(rows: list[dict[str, Any]], label: str, qps: float) -> Table:
    table = Table(title=f"Cheapest deployments for {qps:g} requests/s ({label})", title_justify="left")
    for header in (
        "#",
        "instance",
        "cloud / region",
        "market",
        "accel.",
        "inst.",
        "replicas",
        "batch",
        "wait ms",
        "P ms (band)",
        "req/s per replica",
        "$/h",
        "$/M req (band)",
        "basis",
    ):
        table.add_column(header, justify="right" if header not in ("instance", "cloud / region") else "left")
    for rank, row in enumerate(rows, 1):
        count = row["accelerator_count"] or 0
        accel = f"{count:g}× {row['accelerator_key']}" if row["accelerator_key"] else "CPU"
        spot_extra = f" (+{row['spot_extra_instances']})" if row["spot_extra_instances"] else ""
        table.add_row(
            str(rank),
            row["instance_type"],
            f"{row['cloud']} {row['region']}",
            row["market"],
            accel,
            f"{row['instances']}{spot_extra}",
            str(row["replicas"]),
            str(row["batch"]),
            f"{row['max_wait_ms']:.2g}",
            f"{format_ms(row['latency_ms'])} ({format_ms(row['latency_high_ms'])})",
            f"{row['capacity_per_replica']:,.0f}",
            format_money(row["deployment_price_per_hour"]),
            f"{row['usd_per_million_requests']:.3g} ({row['usd_per_million_requests_high']:.3g})",
            row["basis"],
        )
    return table
