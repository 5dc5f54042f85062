"""``perdollar catalog sources``: where the bill's egress, storage, energy and carbon figures come from."""

from __future__ import annotations

import dataclasses

from rich.table import Table

from perdollar.cli.catalog_cmd import catalog_app
from perdollar.cli.catalog_options import SourceFilter
from perdollar.cli.common import emit_json, print_table
from perdollar.cli.declared import Group, takes
from perdollar.cli.shared_options import OPTIONS, OUTPUT, Output


@catalog_app.command("sources")
@takes(kept=Group(SourceFilter, panel=OPTIONS), output=OUTPUT)
def catalog_sources(*, kept: SourceFilter, output: Output) -> None:
    """List every egress/storage rate, energy factor and grid carbon intensity the bill uses, with
    its source and date; stale ones are marked (rates after PERDOLLAR_STALE_PRICE_DAYS, default 30
    days, like prices; yearly energy and grid figures after three years).

      perdollar catalog sources --stale
    """
    json_output = output.json_output
    from perdollar.catalog.bill_sources import bill_sources

    rows = [row for row in bill_sources() if row.stale or not kept.stale_only]
    if json_output:
        emit_json({"sources": [dataclasses.asdict(row) for row in rows]}, table="sources")
        return
    stale = sum(row.stale for row in rows)
    table = Table(title=f"{len(rows)} bill figures, {stale} stale", title_justify="left")
    for name in ("table", "cloud", "item", "value", "unit", "as of", "source"):
        table.add_column(name, overflow="fold")
    for row in rows:
        table.add_row(row.table, row.cloud, row.item, f"{row.value:g}", row.unit,
                      row.as_of + (" (stale)" if row.stale else ""), row.source)  # fmt: skip
    print_table(table)
