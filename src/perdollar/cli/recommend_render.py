"""Output of ``recommend`` and ``compare``: JSON on stdout with ``--json``, else the tables."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.cli import common

if TYPE_CHECKING:  # types only: importing them would load pandas or the database driver at start-up
    from perdollar.price.frame import SpotAssumptions
    from perdollar.select.compare import Comparison
    from perdollar.select.model import Recommendation


def show_recommendation(
    recommendation: Recommendation,
    *,
    stored_id: str | None,
    report: Path | None,
    json_output: bool,
    top: int,
    show_excluded: bool,
    unit: str,
) -> None:
    if json_output:
        from perdollar.select.serialize import recommendation_to_dict

        common.emit_json(
            {
                **recommendation_to_dict(recommendation),
                "id": stored_id,
                "report": str(report) if report else None,
            },
            table="estimates",
        )
        return
    from perdollar.report.tables import print_recommendation

    print_recommendation(common.console, recommendation, top=top, show_excluded=show_excluded, unit=unit)
    if stored_id:
        common.console.print(f"[dim]stored as {stored_id}[/]", highlight=False)
    if report is not None:
        common.console.print(f"report written to {report}", highlight=False)


def show_comparison(
    comparison: Comparison,
    *,
    workload: str,
    catalog_captured_at: str,
    assumptions: SpotAssumptions,
    unit: str,
    has_target: bool,
    deadline_hours: float | None,
    json_output: bool,
    stored_id: str | None = None,
) -> None:
    if json_output:
        common.emit_json(
            {
                "workload": workload,
                "catalog_captured_at": catalog_captured_at,
                "comparison": comparison,
                "recommendation_id": stored_id,
            },
            table="comparison.estimates",
        )
        return
    from perdollar.price.frame import describe_assumptions
    from perdollar.report.tables import comparison_table, flags_note

    table = comparison_table(
        comparison.estimates,
        unit=unit,
        has_target=has_target,
        deadline_hours=deadline_hours,
        width=common.console.width,
    )
    common.print_table(table)
    flagged = flags_note(e.flags for e in comparison.estimates)
    if flagged:
        common.console.print(f"[dim]{flagged}[/]", highlight=False)
    common.console.print(comparison.summary, highlight=False, markup=False)
    common.console.print(
        f"[dim]{describe_assumptions(assumptions)}; ± from the prediction bands "
        f"(correlated on the same chip) and the spot bucket's width; "
        f"catalog captured {catalog_captured_at}[/]",
        highlight=False,
    )
    if stored_id:
        common.console.print(f"[dim]stored as {stored_id}[/]", highlight=False)
