"""How `recommend LLM --inference` shows its ranked deployments: one row per machine, degree and format."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from rich.markup import escape
from rich.table import Table

from perdollar.select.llm_serving import DEPLOYMENT_SHAPE, llm_deployment_label

COLUMNS = (
    "cloud",
    "instance_type",
    "region",
    "market",
    "accelerator_key",
    "tensor_parallel",
    "precision",
    "engine",
    "kv_precision",
    "replicas",
    "instances",
    "spot_extra_instances",
    "batch",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "max_concurrent_sequences",
    "kv_cache_gib",
    "deployment_price_per_hour",
    "usd_per_million_output_tokens",
    "usd_per_million_tokens",
    "basis",
    "bottleneck",
)


def _plain(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value.item() if hasattr(value, "item") else value


def llm_deployment_rows(frame: pd.DataFrame, top: int) -> list[dict[str, Any]]:
    """The best ``top`` feasible deployments (best region per machine, degree and format)."""
    feasible = frame[frame["feasible"]].drop_duplicates(DEPLOYMENT_SHAPE).head(top)
    return [
        {"label": llm_deployment_label(row), **{c: _plain(row.get(c)) for c in COLUMNS}}
        for _, row in feasible.iterrows()
    ]


def llm_excluded_rows(frame: pd.DataFrame) -> list[dict[str, Any]]:
    out = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    return [
        {"accelerator": row["accelerator_key"], "reason": row["excluded_reason"]} for _, row in out.iterrows()
    ]


def llm_deployment_table(rows: list[dict[str, Any]], slo: str, rps: float) -> Table:
    table = Table(title=f"Cheapest deployments for {rps:g} requests/s within {slo}", title_justify="left")
    for name, justify in (
        ("#", "right"),
        ("configuration", "left"),
        ("TP × format (engine)", "left"),
        ("replicas (inst.)", "right"),
        ("TTFT / TPOT p99 ms", "right"),
        ("$/h", "right"),
        ("$/M out tok", "right"),
        ("$/M tok", "right"),
        ("bound by", "left"),
    ):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for rank, row in enumerate(rows, start=1):
        base = row["instances"] - row["spot_extra_instances"]
        machines = f"{base}+{row['spot_extra_instances']}" if row["spot_extra_instances"] else f"{base}"
        head, _, where = row["label"].partition(" (")
        table.add_row(
            str(rank),
            escape(f"{head.split(' with ')[0]}\n({where.split(' with ')[0]}"),
            f"TP{row['tensor_parallel']} × {row['precision']} ({row['engine']}, KV {row['kv_precision']})",
            f"{row['replicas']} ({machines})",
            f"{row['ttft_p99_ms']:.0f} / {row['tpot_p99_ms']:.1f}",
            f"${row['deployment_price_per_hour']:,.2f}",
            f"${row['usd_per_million_output_tokens']:.3g}",
            f"${row['usd_per_million_tokens']:.3g}",
            f"{row['bottleneck']} ({row['basis']})",
        )
    return table
