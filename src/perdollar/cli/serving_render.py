"""Terminal tables and JSON rows for the inference commands: latency curves, serving load
steps and ranked deployments."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict

from rich.markup import escape
from rich.table import Table

from perdollar.catalog.price_age import is_stale, price_age_days
from perdollar.fmt import format_money
from perdollar.price.model import Estimate, ServingFigures
from perdollar.terminal_tables import FittingTable
from perdollar.vocabulary import Basis

if TYPE_CHECKING:
    from perdollar.measure.latency import LatencyCurve
    from perdollar.measure.serving.loadgen import LoadResult


class WhereItRuns(TypedDict):
    """The columns that name a deployment's machine and date its price (every serving table's)."""

    label: str
    cloud: str
    instance_type: str
    region: str
    market: str
    accelerator_key: str | None
    price_captured_at: str | None
    price_age_days: int | None
    price_stale: bool


class PricedRow(WhereItRuns):
    deployment_price_per_hour: float  # all the deployment's instances, USD/h


class DeploymentRow(PricedRow):
    """One ranked deployment of a network served (a row of ``--json``'s ``deployments``)."""

    accelerator_count: float
    instances: int
    spot_extra_instances: int
    replicas: int
    batch: float
    max_wait_ms: float | None
    latency_ms: float | None
    latency_high_ms: float | None
    capacity_per_replica: float | None
    rate_per_replica: float | None
    utilisation: float | None
    price_per_hour: float | None
    usd_per_million_requests: float | None
    usd_per_million_requests_high: float | None
    basis: Basis
    interruption_bucket: str | None
    captured_at: str


def format_ms(value: float | None) -> str:
    if value is None or value != value:  # not predicted, or NaN
        return "–"
    if value == float("inf"):
        return "overload"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


def curve_table(curve: LatencyCurve) -> Table:
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


def load_table(title: str, results: Sequence[LoadResult]) -> Table:
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


def deployment_rows(estimates: Sequence[Estimate], top: int) -> list[DeploymentRow]:
    """The best ``top`` feasible deployments, as the select stage kept them (best region each)."""
    rows: list[DeploymentRow] = []
    for estimate in [e for e in estimates if e.feasible][:top]:
        figures = estimate.serving or ServingFigures()
        rows.append(
            {
                **where_it_runs(estimate),
                "accelerator_count": estimate.accelerators_per_node,
                "instances": estimate.nodes,
                "spot_extra_instances": figures.spot_extra_instances,
                "replicas": figures.replicas,
                "batch": figures.batch,
                "max_wait_ms": figures.max_wait_ms,
                "latency_ms": figures.latency_ms,
                "latency_high_ms": figures.latency_high_ms,
                "capacity_per_replica": figures.capacity_per_replica_rps,
                "rate_per_replica": figures.rate_per_replica_rps,
                "utilisation": figures.utilisation,
                "price_per_hour": figures.price_per_instance_per_hour,
                "deployment_price_per_hour": estimate.price_per_hour,
                "usd_per_million_requests": figures.usd_per_million_requests,
                "usd_per_million_requests_high": figures.usd_per_million_requests_high,
                "basis": estimate.basis,
                "interruption_bucket": estimate.interruption_bucket,
                "captured_at": estimate.captured_at,
            }
        )
    return rows


def where_it_runs(estimate: Estimate, on: str | dt.date | None = None) -> WhereItRuns:
    """The columns that name a deployment's machine and date its price, shared by every serving
    table's rows; ``on`` (default today) is the day the price's age is counted to."""
    day = on or dt.date.today()
    return {
        "label": estimate.label,
        "cloud": estimate.cloud,
        "instance_type": estimate.instance_type,
        "region": estimate.region,
        "market": estimate.market,
        "accelerator_key": estimate.accelerator,
        "price_captured_at": estimate.captured_at[:10] or None,
        "price_age_days": price_age_days(estimate.captured_at, day),
        "price_stale": is_stale(estimate.captured_at, day),
    }


def price_cell(row: PricedRow, money: Callable[[float], str] = format_money) -> str:
    """A deployment's $/h over its price's date (marked stale when it is)."""
    date = row.get("price_captured_at")
    dated = f"\n{date}{' stale' if row.get('price_stale') else ''}" if date else ""
    return f"{money(row['deployment_price_per_hour'])}{dated}"


def excluded_rows(estimates: Sequence[Estimate]) -> list[dict[str, str]]:
    return [
        {
            "accelerator": e.accelerator or "(CPU)",
            "example_instance": e.instance_type,
            "reason": e.excluded_reason,
        }
        for e in estimates
        if not e.feasible
    ]


def deployment_table(rows: list[DeploymentRow], label: str, qps: float) -> Table:
    table = FittingTable(title=f"Cheapest deployments for {qps:g} requests/s ({label})", title_justify="left")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for header, drop_order in (
        ("#", 0),
        ("instance", 0),
        ("cloud / region", 0),
        ("market", 3),
        ("accel.", 5),
        ("inst.", 4),
        ("replicas", 2),
        ("batch", 6),
        ("wait ms", 7),
        ("P ms (band)", 0),
        ("req/s per replica", 8),
        ("$/h\nprice of", 1),
        ("$/M req (band)", 0),
        ("basis", 9),
    ):
        table.add_column(
            header,
            justify="right" if header not in ("instance", "cloud / region") else "left",
            # A name, and the cost with its band, stay on their lines.
            no_wrap=header in ("instance", "$/M req (band)"),
            drop_order=drop_order,
        )
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
            price_cell(row),
            f"{row['usd_per_million_requests']:.3g} ({row['usd_per_million_requests_high']:.3g})",
            row["basis"],
        )
    return table
