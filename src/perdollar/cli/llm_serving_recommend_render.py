"""How `recommend LLM --inference` shows its ranked deployments: one row per machine, degree and format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from rich.markup import escape
from rich.table import Table

from perdollar.cli.llm_serving_render import engine_build
from perdollar.cli.serving_render import PricedRow, price_cell, where_it_runs
from perdollar.price.model import Estimate, ServingFigures
from perdollar.select.llm_serving import BillFigures
from perdollar.terminal_tables import FittingTable
from perdollar.vocabulary import Basis


class Span(TypedDict):
    low: float | None
    high: float | None


class DeploymentBand(TypedDict):
    """A deployment's 80% bands and the group of held-out rows they come from."""

    level: float
    group: str
    rows: int | None
    validated: bool
    usd_per_million_output_tokens: Span
    ttft_p99_ms: Span
    tpot_p99_ms: Span


class LLMDeploymentRow(PricedRow, BillFigures):
    """One ranked deployment of a language model served (a row of ``--json``'s ``deployments``); its
    energy, carbon and weights-pull figures are the selection's :class:`BillFigures`."""

    tensor_parallel: int | None
    precision: str | None
    engine: str | None
    engine_build: str | None
    kv_precision: str | None
    replicas: int
    instances: int
    spot_extra_instances: int
    batch: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    max_concurrent_sequences: float | None
    kv_cache_gib: float | None
    usd_per_million_output_tokens: float | None
    usd_per_million_tokens: float | None
    basis: Basis
    bottleneck: str
    plan_text: str
    price_basis: str | None
    band: DeploymentBand | None
    ties_with_top: bool


def llm_deployment_rows(
    estimates: Sequence[Estimate], top: int, ties: Sequence[int] = ()
) -> list[LLMDeploymentRow]:
    """The best ``top`` feasible deployments, as the select stage kept them (best region per
    machine, degree and format); ``ties``: the estimates that tie with the top one within bands."""
    rows: list[LLMDeploymentRow] = []
    tied = {id(estimates[i]) for i in ties}
    for estimate in [e for e in estimates if e.feasible][:top]:
        figures = estimate.serving or ServingFigures()
        rows.append(
            {
                **where_it_runs(estimate),
                "tensor_parallel": figures.tensor_parallel,
                "precision": figures.precision,
                "engine": figures.engine,
                "engine_build": engine_build(figures.engine) if figures.engine else None,
                "kv_precision": figures.kv_precision,
                "replicas": figures.replicas,
                "instances": estimate.nodes,
                "spot_extra_instances": figures.spot_extra_instances,
                "batch": figures.batch,
                "ttft_p99_ms": figures.ttft_p99_ms,
                "tpot_p99_ms": figures.tpot_p99_ms,
                "max_concurrent_sequences": figures.max_concurrent_sequences,
                "kv_cache_gib": figures.kv_cache_gib,
                "deployment_price_per_hour": estimate.price_per_hour,
                "usd_per_million_output_tokens": figures.usd_per_million_output_tokens,
                "usd_per_million_tokens": figures.usd_per_million_tokens,
                "basis": estimate.basis,
                "bottleneck": estimate.bottleneck,
                "plan_text": estimate.plan_text,  # a non-GPU stack adds how far its fit reaches
                "energy_kwh_per_million_tokens": figures.energy_kwh_per_million_tokens,
                "co2e_g_per_million_tokens": figures.co2e_g_per_million_tokens,
                "energy_kwh_per_million_output_tokens": figures.energy_kwh_per_million_output_tokens,
                "co2e_g_per_million_output_tokens": figures.co2e_g_per_million_output_tokens,
                "grid_gco2e_per_kwh": figures.grid_gco2e_per_kwh,
                "weights_gb": figures.weights_gb,
                "weights_egress_usd": figures.weights_egress_usd,
                "weights_load_s": figures.weights_load_s,
                "price_basis": figures.price_basis,  # its date is where_it_runs' price_captured_at
                "band": _band(figures),
                "ties_with_top": id(estimate) in tied,
            }
        )
    return rows


def _band(figures: ServingFigures) -> DeploymentBand | None:
    """The deployment's 80% bands (cost per output token, TTFT and TPOT p99) and their group."""
    if figures.band_group is None:
        return None
    return {
        "level": 0.8,
        "group": figures.band_group,
        "rows": figures.band_rows,
        "validated": figures.band_group != "unvalidated",
        "usd_per_million_output_tokens": {"low": figures.usd_per_million_output_tokens_low,
                                          "high": figures.usd_per_million_output_tokens_high},
        "ttft_p99_ms": {"low": figures.ttft_p99_ms_low, "high": figures.ttft_p99_ms_high},
        "tpot_p99_ms": {"low": figures.tpot_p99_ms_low, "high": figures.tpot_p99_ms_high},
    }  # fmt: skip


def _cost_cell(row: LLMDeploymentRow) -> str:
    """$/M output tokens, its band beneath, ≈ where it ties with the top deployment."""
    text = f"${row['usd_per_million_output_tokens']:.3g}"
    band = row.get("band")
    if not band:
        return text
    cost = band["usd_per_million_output_tokens"]
    mark = "≈ " if row.get("ties_with_top") else ""
    wide = "?" if not band["validated"] else ""
    return f"{mark}{text}\n{cost['low']:.2g}…{cost['high']:.2g}{wide}"


def _latency_cell(row: LLMDeploymentRow) -> str:
    text = f"{row['ttft_p99_ms']:.0f} / {row['tpot_p99_ms']:.1f}"
    band = row.get("band")
    if not band:
        return text
    ttft, tpot = band["ttft_p99_ms"], band["tpot_p99_ms"]
    return f"{text}\n{ttft['low']:.0f}…{ttft['high']:.0f} / {tpot['low']:.1f}…{tpot['high']:.1f}"


def llm_excluded_rows(estimates: Sequence[Estimate]) -> list[dict[str, str | None]]:
    return [{"accelerator": e.accelerator, "reason": e.excluded_reason} for e in estimates if not e.feasible]


def _bill_cells(row: LLMDeploymentRow, pulled: bool) -> list[str]:
    """kWh over g CO2e per million output tokens; with stored weights, their egress $ over load s."""
    kwh, grams = row.get("energy_kwh_per_million_output_tokens"), row.get("co2e_g_per_million_output_tokens")
    cells = [f"{kwh:.3g}\n{grams:.3g}" if kwh is not None and grams is not None else "—"]
    if pulled:
        egress, seconds = row.get("weights_egress_usd") or 0.0, row.get("weights_load_s") or 0.0
        cells.append(f"${egress:,.2f}\n{seconds:.0f} s")
    return cells


ENERGY_HEADER = "kWh / g CO2e\nper M out tok"


def missing_energy_line(rows: list[LLMDeploymentRow], left_out: Sequence[str]) -> str:
    """Why the energy column shows "—" for a row ('' when it shows every figure, or is left out)."""
    from perdollar.report.tables import BillFigures, missing_energy_note

    if " ".join(ENERGY_HEADER.split()) in left_out:
        return ""
    return missing_energy_note(
        BillFigures(
            row["accelerator_key"],
            row["cloud"],
            row["region"],
            row.get("energy_kwh_per_million_output_tokens") is not None,
            row.get("co2e_g_per_million_output_tokens") is not None,
        )
        for row in rows
    )


def llm_deployment_table(
    rows: list[LLMDeploymentRow], slo: str, rps: float, *, by_carbon: bool = False
) -> Table:
    ranked_by = "Lowest-emission" if by_carbon else "Cheapest"
    table = FittingTable(
        title=f"{ranked_by} deployments for {rps:g} requests/s within {slo}", title_justify="left"
    )
    pulled = any((row.get("weights_load_s") or 0.0) > 0 for row in rows)
    # (header, justify, drop order): a narrow terminal leaves out the highest first; 0 stays.
    bill_columns = [(ENERGY_HEADER, "right", 7)]
    bill_columns += [("weights pull\n$ / load", "right", 8)] if pulled else []
    for name, justify, drop_order in (
        ("#", "right", 0),
        ("configuration", "left", 0),
        ("TP × format (engine)", "left", 3),
        ("replicas (inst.)", "right", 5),
        ("TTFT / TPOT p99 ms", "right", 2),
        ("$/h\nprice of", "right", 4),
        ("$/M out tok", "right", 0),
        ("$/M tok", "right", 6),
        *bill_columns,
        ("bound by", "left", 9),
    ):
        table.add_column(
            name,
            justify=justify,
            # A name, and a pair of figures read together, stay on their lines.
            no_wrap=name in ("configuration", "replicas (inst.)", "TTFT / TPOT p99 ms"),
            drop_order=drop_order,
        )
    for rank, row in enumerate(rows, start=1):
        base = row["instances"] - row["spot_extra_instances"]
        machines = f"{base}+{row['spot_extra_instances']}" if row["spot_extra_instances"] else f"{base}"
        head, _, where = row["label"].partition(" (")
        table.add_row(
            str(rank),
            escape(f"{head.split(' with ')[0]}\n({where.split(' with ')[0]}"),
            f"TP{row['tensor_parallel']} × {row['precision']} ({row['engine']}, KV {row['kv_precision']})",
            f"{row['replicas']} ({machines})",
            _latency_cell(row),
            price_cell(row, lambda usd: f"${usd:,.2f}"),
            _cost_cell(row),
            f"${row['usd_per_million_tokens']:.3g}",
            *_bill_cells(row, pulled),
            f"{row['bottleneck']} ({row['basis']})",
        )
    return table
