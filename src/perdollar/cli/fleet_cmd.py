"""``recommend LLM --inference --load-curve FILE`` (or ``--trace FILE``): a fleet over the day,
asked through :func:`perdollar.ask.answer` (:mod:`perdollar.ask.fleet`), shown and stored."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from perdollar.cli import common
from perdollar.errors import EXIT_OK
from perdollar.question import Question


def _print(document: Mapping[str, object]) -> None:
    from perdollar.report.fleet_figures import fleet_intervals, fleet_part, fleet_texts
    from perdollar.terminal_tables import FittingTable

    table = FittingTable(title=f"Fleet over the day within {document['slo']}")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for column, drop_order in (
        ("start", 0),
        ("rps", 2),
        ("replicas", 1),
        ("fleet (spot / on-demand)", 0),
        ("$/h", 0),
        ("static peak", 4),
        ("replay p99 ms", 3),
    ):
        table.add_column(
            column,
            justify="left" if column.startswith("fleet") else "right",
            no_wrap=not column.startswith("fleet"),  # figures read together stay on their line
            drop_order=drop_order,
        )
    for row in fleet_intervals(document):
        table.add_row(
            str(row["start"]), f"{row['requests_per_second']:.3g}", str(row["replicas"]),
            f"{row['fleet']} ({row['spot_instances']} / {row['on_demand_instances']})",
            f"${row['usd_per_hour']:.2f}",
            f"{row['static_peak_replicas']} · ${row['static_peak_usd_per_hour']:.2f}",
            f"{row['replay_ttft_p99_ms']:.0f} / {row['replay_tpot_p99_ms']:.1f}"
            + ("" if row["meets_slo"] else " ✗")
            + (f" (+{row['added_by_replay']} by replay)" if row["added_by_replay"] else ""),
        )  # fmt: skip
    common.print_table(table)
    lines = []
    for key, name in (("fleet", "Chosen fleet"), ("autoscaled_single_type", "One type, autoscaled"),
                      ("static_peak", "Static peak")):  # fmt: skip
        part = fleet_part(document, key)
        emitted = part.get("co2e_kg_per_month")
        lines.append(
            f"{name}: ${part['usd_per_month']:,.0f} a month, "
            f"${part['usd_per_million_output_tokens']:.3g} per million output tokens "
            f"(${part['usd_per_million_tokens']:.3g} in and out), "
            + (f"{emitted:,.0f} kg CO₂e a month, " if emitted is not None else "")
            + f"spot share {part['spot_share']:.0%} — {'; '.join(fleet_texts(part, 'parts'))}"
            + _price_dates(part)
        )
    lines.append(
        f"Saving against the static peak: {document['saving_vs_static_peak']:.0%}. Replay: the SLO met in "
        f"{document['replay_slo_met_share']:.0%} of intervals."
    )
    for line in (*lines, *fleet_texts(document, "notes")):
        common.console.print(line, highlight=False, markup=False)


def _price_dates(part: Mapping[str, object]) -> str:
    """ "(prices of 2025-11-30)": the dates of the prices the fleet's machines are billed at."""
    captured = part.get("price_captured_at") or ()
    listed = captured if isinstance(captured, list | tuple) else ()
    dates = sorted({d for d in listed if isinstance(d, str) and d})
    return f" (prices of {' … '.join(dict.fromkeys((dates[0], dates[-1])))})" if dates else ""


def recommend_llm_fleet(
    question: Question, *, json_output: bool, report_path: Path | None, store_url: str | None = None,
    store: bool = False,
) -> int:  # fmt: skip
    """The fleet for ``question`` (whose ``traffic`` holds the curve's text and how the fleet
    autoscales), shown and stored."""
    from perdollar.ask import answer
    from perdollar.ask.fleet import fleet_figures
    from perdollar.cli.persist import attempt_store, save_recommendation

    with common.progress("recommend --inference --load-curve", quiet=json_output) as bar:
        recommendation = answer(question, progress=lambda message: bar.update(description=message))
    document = fleet_figures(recommendation)
    stored_id, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store_url, enabled=store)
    )
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path, option="--report")
    if json_output:
        common.emit_json({**document, "catalog_captured_at": recommendation.catalog_captured_at,
                          "recommendation_id": stored_id}, table="intervals")  # fmt: skip
    else:
        _print(document)
        if stored_id:
            common.console.print(
                f"Stored as recommendation {stored_id} (`perdollar history reevaluate {stored_id}` asks it"
                " again).",
                highlight=False,
            )
    if store_failure is not None:
        raise store_failure
    return EXIT_OK
