"""`perdollar catalog gpus` (cheapest GPU-hour per accelerator) and `perdollar catalog flags`."""

from __future__ import annotations

import math
from collections.abc import Mapping

from perdollar.cli.catalog_cmd import catalog_app
from perdollar.cli.catalog_options import GpuFilter
from perdollar.cli.catalog_render import FLAG_MARKS, format_price, print_table, quantity
from perdollar.cli.common import console, emit_json
from perdollar.cli.declared import Group, takes
from perdollar.cli.shared_options import OPTIONS, OUTPUT, PLACES, Output, Places
from perdollar.terminal_tables import FittingTable


def _where(row: Mapping[str, object], prefix: str) -> str:
    if row[f"{prefix}_cloud"] is None:
        return ""
    return f"{row[f'{prefix}_instance_type']} ({row[f'{prefix}_cloud']} {row[f'{prefix}_region']})"


@catalog_app.command("gpus")
@takes(kept=Group(GpuFilter, panel=OPTIONS), places=PLACES, output=OUTPUT)
def catalog_gpus(*, kept: GpuFilter, places: Places, output: Output) -> None:
    """One row per accelerator: the cheapest on-demand and spot price per GPU-hour over every cloud
    and region, where it is, and when that price was captured.

      perdollar catalog gpus --accelerator H100
      perdollar catalog gpus --min-memory 40 --cloud aws --cloud runpod --csv
    """
    accelerator, min_memory = kept.accelerator, kept.min_memory
    cloud = list(places.clouds)
    region = list(places.regions)
    json_output = output.json_output
    from perdollar.catalog import load
    from perdollar.catalog.gpu_prices import gpu_prices

    catalog = load()
    frame = gpu_prices(
        catalog,
        cloud=cloud or None,
        region=region or None,
        accelerator=accelerator,
        min_memory_gib=min_memory,
    )
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]  # fmt: skip
    if json_output:
        emit_json(rows)
        return
    table = FittingTable(title=f"{len(rows)} accelerators: cheapest USD per GPU-hour", title_justify="left")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    columns = (("accelerator", 0), ("GiB", 5), ("on-demand $/GPU-h", 0), ("where", 4), ("captured", 6),
               ("spot $/GPU-h", 0), ("where", 0), ("captured", 7))  # fmt: skip
    for header, drop_order in columns:
        # "where" (instance, cloud, region) may wrap between its words; the rest stays on one line.
        table.add_column(header, no_wrap=header != "where", drop_order=drop_order)
    for row in rows:
        table.add_row(
            row["accelerator_key"], quantity(row["memory_gib"]),
            format_price(row["on_demand_per_gpu_hour"]), _where(row, "on_demand"),
            row["on_demand_captured_at"] or "",
            format_price(row["spot_per_gpu_hour"]), _where(row, "spot"), row["spot_captured_at"] or "",
        )  # fmt: skip
    print_table(table)
    console.print(
        f"[dim]catalog snapshot {catalog.snapshot_id}; a machine's price ÷ its GPUs (a 1/2 slice: ×2); "
        "virtual-desktop slices left out. Spot: the typical zone (median or mean of its zones).[/]",
        soft_wrap=True,
        highlight=False,
    )


@catalog_app.command("flags")
@takes(output=OUTPUT)
def catalog_flags(
    *,
    output: Output,
) -> None:
    """Explain every data-quality flag (⚠) the tables print, with how many offers carry it.

    perdollar catalog flags
    """
    json_output = output.json_output
    from perdollar.catalog import load
    from perdollar.catalog.provenance import NOT_FOR_TRAINING, flag_meanings

    catalog = load()
    counts: dict[str, int] = {}
    excluded = {key for key, it in catalog.instance_types.items() if it.excluded_reason}
    for offer in catalog.offers:
        for flag in offer.flags:
            counts[flag] = counts.get(flag, 0) + 1
        if (offer.cloud, offer.instance_type) in excluded:
            counts[NOT_FOR_TRAINING] = counts.get(NOT_FOR_TRAINING, 0) + 1
    meanings = flag_meanings({str(k): str(v) for k, v in dict(catalog.manifest.get("flags", {})).items()})
    names = sorted(set(meanings) | set(counts))
    rows = [
        {"flag": name, "mark": FLAG_MARKS.get(name, name) or "est.", "offers": counts.get(name, 0),
         "meaning": meanings.get(name, "no explanation recorded in this snapshot")}
        for name in names
    ]  # fmt: skip
    if json_output:
        emit_json(rows)
        return
    table = FittingTable(title=f"{len(rows)} data-quality flags", title_justify="left")
    for header, drop_order in (("flag", 0), ("table mark", 2), ("offers", 1), ("meaning", 0)):
        table.add_column(header, no_wrap=header != "meaning", drop_order=drop_order)
    for row in rows:
        table.add_row(str(row["flag"]), str(row["mark"]), f"{row['offers']:,}", str(row["meaning"]))
    print_table(table)
