"""``perdollar compare LLM --inference``: the configurations' deployments under each engine asked for."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from rich.markup import escape
from rich.table import Table

from perdollar.ask.options import Serving
from perdollar.cli import common
from perdollar.cli.declared import StoreChoice
from perdollar.errors import EXIT_OK
from perdollar.goals import served
from perdollar.question import LanguageModelSettings, NearSettings
from perdollar.terminal_tables import FittingTable
from perdollar.vocabulary import Family


def compare_llm_serving(
    workload: str,
    configs: list[str],
    *,
    family: Family,
    serving: Serving,
    language_model: LanguageModelSettings,
    precision: str | None,
    json_output: bool,
    store: StoreChoice,
    near: NearSettings = NearSettings(),
) -> int:
    """Each configuration sized for the rate under each ``--engine`` (a comma list, or ``any``)."""
    from perdollar.ask.building import serving_comparison_question
    from perdollar.ask.llm_serving_compare import compare_language_model_serving

    question = serving_comparison_question(
        workload, family=family, serving=serving, language_model=language_model, precision=precision
    )
    question = replace(question, near=near)
    with common.progress("compare --inference", quiet=json_output) as bar:
        comparison = compare_language_model_serving(
            question, configs, store_url=store.store_url, use_store=store.enabled,
            progress=lambda message: bar.update(description=message),
        )  # fmt: skip
    goal = served(question.goal)
    rps = goal.qps if goal else 0.0
    if json_output:
        common.emit_json(
            {
                "workload": workload,
                "requests_per_second": rps,
                "engines": comparison.engines,
                "candidates": comparison.rows,
                "summary": comparison.summary,
                "notes": comparison.notes,
                "catalog_captured_at": comparison.catalog_captured_at,
            },
            table="candidates",
        )
        return EXIT_OK
    from perdollar.report.tables import flags_note

    common.print_table(_table(comparison.rows, comparison.slo_label, rps))
    flagged = flags_note(flags for row in comparison.rows if isinstance(flags := row["flags"], list))
    if flagged:
        common.console.print(f"[dim]{flagged}[/]", highlight=False)
    common.console.print(comparison.summary, highlight=False, markup=False)
    for note in comparison.notes:
        common.console.print(note, highlight=False, markup=False)
    return EXIT_OK


def _table(rows: tuple[Mapping[str, object], ...], slo: str, rps: float) -> Table:
    title = f"Each configuration for {rps:g} requests/s within {slo}"
    table = FittingTable(title=title, title_justify="left")
    # (header, justify, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for name, justify, drop_order in (
        ("configuration", "left", 0),
        ("engine", "left", 2),
        ("deployment", "left", 0),  # a reason when it is out: wraps between words
        ("TTFT / TPOT p99 ms", "right", 3),
        ("$/M out tok", "right", 0),
        ("vs cheapest", "right", 1),
    ):
        table.add_column(
            name,
            justify=justify,
            no_wrap=name in ("configuration", "TTFT / TPOT p99 ms"),  # a pair of figures read together
            drop_order=drop_order,
        )
    for row in rows:
        if row["feasible"]:
            cost = f"${row['usd_per_million_output_tokens']:.3g}"
            ratio = row["times_cheapest"]
            if not isinstance(ratio, int | float):  # None: no plausible price to compare with
                versus = "—"
            else:
                versus = "cheapest" if abs(ratio - 1) < 1e-9 else f"{ratio:.2g}×"
            if not row["plausible_price"]:
                versus += " (price-outlier)"
            latency = f"{row['ttft_p99_ms']:.0f} / {row['tpot_p99_ms']:.1f}"
            flagged = " ⚠" if row["flags"] else ""
            deployment = f"{row['deployment']}{flagged}, {row['replicas']:.0f} replica(s)"
        else:
            cost, versus, latency = "—", "—", "—"
            deployment = f"out: {row['excluded_reason']}"
        table.add_row(
            escape(str(row["configuration"])), str(row["engine"]), escape(deployment), latency, cost, versus
        )
    return table
