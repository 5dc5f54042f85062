"""Terminal rendering for `perdollar catalog`: tables, number formats, the snapshot-age line."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from perdollar.catalog.provenance import NOT_FOR_TRAINING
from perdollar.cli.common import console, print_table
from perdollar.terminal_tables import FittingTable

if TYPE_CHECKING:
    import pandas as pd

    from perdollar.catalog import Catalog
    from perdollar.catalog.model import Accelerator

# One row of a catalog frame as JSON values (``records``): each cell read as the frame holds it.
CatalogRecord = dict[str, Any]


def format_price(value: float | None) -> str:
    """List prices are exact: up to four significant digits, never rounded to cents."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    return f"${value:,.0f}" if value >= 1000 else f"${value:.4g}"


def quantity(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "—"
    number = float(value)
    text = f"{number:,.0f}" if number.is_integer() or abs(number) >= 100 else f"{number:.3g}"
    return f"{text}{unit}"


def accelerator_cell(row: CatalogRecord) -> str:
    count = row["accelerator_count"]
    name = row["accelerator"]
    if not count or not isinstance(name, str):
        return "CPU only"
    if count < 1:  # a slice of one GPU: its share of the memory
        return f"{quantity(count)}× {name} ({quantity(row['accelerator_memory_gib_total'])}G slice)"
    return f"{quantity(count)}× {name} {quantity(row['accelerator_memory_gib'])}G"


def age_line(catalog: Catalog) -> str:
    age = catalog.age_days()
    return (
        f"catalog snapshot {catalog.snapshot_id}: prices captured {catalog.oldest_price_date} … "
        f"{catalog.captured_at} (newest is {age} days old; priced = each row's date, on-demand / spot "
        "where they differ); USD per instance-hour, Linux. "
        "Refresh with `perdollar catalog refresh`; flags: `perdollar catalog flags`. "
        "Spot: the typical zone's price (the zones' median, or mean), spot zones = lowest…highest; "
        "est. = estimated from the Spot Advisor; interrupt = AWS Spot Advisor monthly bucket, "
        "? = not published (GCP, Azure, GPU clouds)."
    )


def price_dates(row: CatalogRecord) -> str:
    """When the row's prices were captured: one date, or on-demand's / spot's where they differ."""
    dates = [str(day)[:10] for day in (row.get("captured_at"), row.get("spot_captured_at")) if day]
    return " / ".join(dict.fromkeys(dates))


def listing_table(rows: list[CatalogRecord], title: str, *, with_instance: bool = True) -> Table:
    table = FittingTable(title=title, title_justify="left", header_style="bold", pad_edge=False)
    # (header, justify, drop order): a narrow terminal leaves out the highest first; 0 stays.
    headers = [("instance type", "left", 0), ("cloud", "left", 1)] if with_instance else []
    headers += [
        ("region", "left", 0), ("vCPU", "right", 4), ("RAM GiB", "right", 5), ("accelerators", "left", 0),
        ("net Gb/s", "right", 6), ("on-demand $/h", "right", 0), ("spot $/h", "right", 0),
        ("spot zones $/h", "right", 7), ("interrupt", "left", 3), ("priced", "left", 1), ("flags", "left", 2),
    ]  # fmt: skip
    for header, justify, drop_order in headers:
        table.add_column(
            header,
            justify=justify,
            no_wrap=header != "flags",
            drop_order=drop_order,
        )
    for row in rows:
        spot = format_price(row["spot_price_per_hour"])
        # The zones' range where they differ: the typical price above may be paid in neither.
        low, high = row.get("spot_price_min_per_hour"), row["spot_price_max_per_hour"]
        low = low if low is not None and low == low else row["spot_price_per_hour"]
        spread = high is not None and high == high and high != low
        zones = f"{format_price(low)}…{format_price(high)}" if spread else ""
        if row["spot_price_basis"] and str(row["spot_price_basis"]).startswith("estimated"):
            spot += " est."
        interruption = row["spot_interruption"] or ("?" if row["spot_price_per_hour"] is not None else "")
        cells = [row["instance_type"], row["cloud"]] if with_instance else []
        cells += [
            row["region"], quantity(row["vcpus"]), quantity(row["memory_gib"]), accelerator_cell(row),
            quantity(row["network_gbps"]), format_price(row["price_per_hour"]), spot, zones, interruption,
            price_dates(row),
            " ".join([FLAG_MARKS.get(f, f) for f in row["flags"]] + (
                [NOT_FOR_TRAINING] if row.get("excluded_reason") else [])),
        ]  # fmt: skip
        table.add_row(*map(escape, cells))  # names come from provider files: never read as markup
    return table


# Short marks for data-quality flags in tables (the JSON carries the full flag names).
FLAG_MARKS = {
    "gcp-gpu-sku-price-inconsistent-across-regions": "price?",
    "price-outlier": "outlier",
    "gcp-h100-spot-close-to-on-demand": "spot≈od",
    "spot-price-equals-on-demand": "spot=od",
    "accelerator-filled-in-from-size-docs": "acc-filled",
    "gcp-host-vm-price-missing": "no-host-price",
    "source-mislabels-trainium-as-inferentia": "relabelled",
    "spot-price-estimated-from-advisor": "",
    "interruption-bucket-from-previous-snapshot": "old-bucket",
    "committed-term-from-published-discount": "committed",
    "priced-as-managed-service": "managed",
    "capacity-blocks-only": "blocks-only",
    "reservation-needed": "reservation",
    "spot-or-flex-start-only": "spot/flex-only",
    "reservation-only": "reservation-only",
    "gcp-nonstandard-sku-price": "not-standard-price",
    "spot-far-below-peers": "spot≪peers",
    "managed-spot-estimated-from-vm-spot": "managed-spot",
}


def records(frame: pd.DataFrame, fields: tuple[str, ...]) -> list[CatalogRecord]:
    from perdollar.cli.common import to_jsonable

    records = []
    for row in frame[list(fields)].to_dict("records"):
        clean = {k: to_jsonable(v) for k, v in row.items()}
        clean = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in clean.items()}
        if isinstance(clean.get("accelerator"), float):
            clean["accelerator"] = None
        clean["flags"] = list(row["flags"]) if isinstance(row["flags"], tuple) else []
        records.append(clean)
    return records


def print_show(result: CatalogRecord, chip: Accelerator | None) -> None:
    parts = result["name_parts"]
    console.print(f"[bold]{escape(result['instance_type'])}[/] ({escape(result['cloud'])})", highlight=False)
    if parts is not None:
        console.print(
            f"  name: prefix={parts.prefix or '—'} family={parts.family} "
            f"generation={parts.generation or '—'} attributes={parts.attributes or '—'} size={parts.size}",
            highlight=False,
        )
    console.print(
        f"  {quantity(result['vcpus'])} vCPUs, {quantity(result['memory_gib'])} GiB RAM, {result['arch']}, "
        f"network {quantity(result['network_gbps'], ' Gb/s')}, EFA interfaces {result['efa_interfaces']}, "
        f"local disk {quantity(result['local_disk_gb'], ' GB')}",
        highlight=False,
    )
    if chip is not None:
        console.print(
            f"  {quantity(result['accelerator_count'])}× {chip.key} ({chip.vendor} {chip.architecture}, "
            f"{quantity(chip.memory_gib)} GiB, {quantity(chip.memory_bandwidth_gbps)} GB/s, "
            f"stack {chip.software_stack})",
            highlight=False,
        )
        peaks = ", ".join(
            f"{dtype} {quantity(chip.peak_tflops(dtype))}"
            for dtype in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
            if chip.peak_tflops(dtype)
        )
        console.print(
            f"  dense peak TFLOPS per device: {peaks or '—'}; interconnect {chip.interconnect or '—'} "
            f"({quantity(chip.interconnect_bandwidth_gbps, ' GB/s')}); spec confidence {chip.confidence}",
            highlight=False,
        )
    else:
        console.print("  no accelerator (CPU only)")
    for note in result["notes"]:
        console.print(f"  note: {note}", highlight=False)
    print_table(listing_table(result["offers"], f"{len(result['offers'])} regions", with_instance=False))
