"""`perdollar catalog`: browse instance types, accelerators and prices (refresh: catalog_refresh_cmd)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from perdollar.cli.catalog_options import ListingFilter
from perdollar.cli.catalog_render import (
    age_line,
    listing_table,
    print_show,
    print_table,
    quantity,
    records,
)
from perdollar.cli.common import console, emit_json
from perdollar.cli.declared import Group, takes
from perdollar.cli.shared_options import CLOUD_ONLY, OPTIONS, OUTPUT, PLACES, Output, Places, only_one
from perdollar.terminal_tables import FittingTable

if TYPE_CHECKING:
    from perdollar.catalog import Catalog, InstanceType

catalog_app = typer.Typer(
    name="catalog",
    invoke_without_command=True,
    no_args_is_help=False,
    help="""Browse cloud instance types, their accelerators and prices (on-demand and spot).

Every price says when it was captured. Without a subcommand, lists offers, one row per
(cloud, instance type, region), cheapest first.

  perdollar catalog --accelerator a10g --cloud aws
  perdollar catalog --accelerator A100 --min-accelerators 8 --market spot --sort spot
  perdollar catalog --min-accelerator-memory 40 --max-price 5 --json
  perdollar catalog show ml.g4dn.12xlarge
  perdollar catalog accelerators
  perdollar catalog gpus --accelerator H100
  perdollar catalog flags
  perdollar catalog refresh
""",
)

LISTING_JSON_FIELDS = (
    "cloud", "instance_type", "region", "vcpus", "memory_gib", "arch", "accelerator", "accelerator_key",
    "accelerator_count", "accelerator_memory_gib", "accelerator_memory_gib_total", "network_gbps",
    "efa_interfaces", "price_per_hour", "spot_price_per_hour", "spot_price_min_per_hour",
    "spot_price_max_per_hour", "spot_interruption", "spot_price_basis", "captured_at", "spot_captured_at",
    "flags", "excluded_reason",
)  # fmt: skip


@catalog_app.callback()
@takes(kept=Group(ListingFilter, panel=OPTIONS), places=PLACES, output=OUTPUT)
def catalog_list(ctx: typer.Context, *, kept: ListingFilter, places: Places, output: Output) -> None:
    """List offers (one row per cloud, instance type and region), filtered and sorted."""
    limit = kept.limit
    cloud = list(places.clouds)
    region = list(places.regions)
    json_output = output.json_output
    if ctx.invoked_subcommand is not None:
        return
    from perdollar.catalog import find, load

    catalog = load()
    frame = find(
        catalog, cloud=cloud or None, region=region or None, accelerator=kept.accelerator,
        min_accelerator_memory_gib=kept.min_accelerator_memory, min_accelerators=kept.min_accelerators,
        min_vcpus=kept.min_vcpus, market=kept.market, max_price=kept.max_price, cpu_only=kept.cpu_only,
        sort=kept.sort,
    )  # fmt: skip
    total = len(frame)
    if json_output:
        emit_json(records(frame.head(limit) if limit else frame, LISTING_JSON_FIELDS))
        return
    shown = frame.head(limit or 40)
    rows = records(shown, LISTING_JSON_FIELDS)
    print_table(
        listing_table(rows, f"{total} offers" + (f" (first {len(rows)})" if total > len(rows) else ""))
    )
    console.print(f"[dim]{age_line(catalog)}[/]", soft_wrap=True, highlight=False)
    if total > len(rows):
        console.print(f"[dim]{total - len(rows)} more rows: use --limit N or filters.[/]", highlight=False)


@catalog_app.command("show")
@takes(places=CLOUD_ONLY, output=OUTPUT)
def catalog_show(
    name: str = typer.Argument(
        ...,
        help="Instance name: g4dn.12xlarge, ml.g5.4xlarge, a2-highgpu-1g, "
        "tpu-v5litepod-8, Standard_NC24ads_A100_v4.",
    ),
    *,
    places: Places,
    output: Output,
) -> None:
    """Show one instance type: its parsed name, accelerator specs and offers per region.

    perdollar catalog show ml.g4dn.12xlarge
    perdollar catalog show a3-highgpu-8g --json
    """
    cloud = only_one(places.clouds, "--cloud")
    json_output = output.json_output
    from perdollar.catalog import listing_frame, load

    catalog = load()
    instance = catalog.instance(name, cloud)
    chip = catalog.accelerator_of(instance)
    frame = listing_frame(catalog)
    offers = frame[(frame["cloud"] == instance.cloud) & (frame["instance_type"] == instance.name)]
    offers = offers.sort_values(["price_per_hour", "region"], na_position="last")
    notes = []
    if instance.name_parts and instance.name_parts.prefix == "ml":
        notes.append(
            "SageMaker ml. names run the EC2 shape shown; prices are EC2's (SageMaker adds its own fee)."
        )
    if instance.excluded_reason:
        notes.append(f"left out of rankings: {instance.excluded_reason}.")
    notes += gpu_cloud_price_notes(catalog, instance)
    if instance.single_node_reason:
        notes.append(f"{instance.single_node_reason}.")
    if instance.accelerator_key and instance.accelerator_key.startswith("TPU"):
        notes.append("TPU slice: accelerator_count is chips; host vCPUs and memory are not in the catalog.")
    count = instance.accelerator_count
    result = {
        "cloud": instance.cloud,
        "instance_type": name.strip()
        if instance.name_parts and instance.name_parts.prefix == "ml"
        else instance.name,
        "ec2_instance_type": instance.name if instance.cloud == "aws" else None,
        "name_parts": instance.name_parts,
        "vcpus": instance.vcpus,
        "memory_gib": instance.memory_gib,
        "arch": instance.arch,
        "accelerator": instance.accelerator_name,
        "accelerator_key": instance.accelerator_key,
        "accelerator_count": count,
        "accelerator_memory_gib": instance.accelerator_memory_gib_total / count if count else None,
        "accelerator_memory_gib_total": instance.accelerator_memory_gib_total,
        "network_gbps": instance.network_gbps,
        "efa_interfaces": instance.efa_interfaces,
        "local_disk_gb": instance.local_disk_gb,
        "software_stack": chip.software_stack if chip else "cpu",
        "accelerator_specs": chip,
        "offers": records(offers, LISTING_JSON_FIELDS),
        "snapshot_id": catalog.snapshot_id,
        "captured_at": catalog.captured_at,
        "notes": notes,
    }
    if json_output:
        emit_json(result)
        return
    print_show(result, chip)
    console.print(f"[dim]{age_line(catalog)}[/]", soft_wrap=True, highlight=False)


def gpu_cloud_price_notes(catalog: Catalog, instance: InstanceType) -> list[str]:
    """Where a bundled GPU-cloud machine's prices were read: its row of the package's table."""
    from perdollar.catalog.gpu_cloud_table import GPU_CLOUD_PRICE_BASIS, read_gpu_cloud_offers

    machine = (instance.cloud, instance.name)
    bundled = {
        o.market
        for o in catalog.offers
        if (o.cloud, o.instance_type) == machine and o.price_basis.startswith(GPU_CLOUD_PRICE_BASIS)
    }
    return [
        f"{row.market} price listed as {row.listed_as!r} ({row.listed_price:g} USD per {row.listed_per}) "
        f"on {row.source_url}, read {row.read_on}"
        for row in read_gpu_cloud_offers()
        if (row.provider, row.machine) == machine and row.market in bundled
    ]


@catalog_app.command("accelerators")
@takes(output=OUTPUT)
def catalog_accelerators(
    *,
    output: Output,
) -> None:
    """List the accelerators the catalog knows, with per-device memory, bandwidth and peak rates.

    perdollar catalog accelerators --json
    """
    json_output = output.json_output
    from perdollar.catalog import load

    catalog = load()
    chips = sorted(catalog.accelerators.values(), key=lambda c: (c.vendor, c.family, c.key))
    if json_output:
        emit_json(chips)
        return
    table = FittingTable(title=f"{len(chips)} accelerators (per device; dense peaks)", title_justify="left")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for header, drop_order in (("key", 0), ("vendor", 6), ("architecture", 7), ("memory GiB", 0), ("GB/s", 1),
                               ("fp32", 4), ("tf32", 5), ("bf16", 0), ("fp16", 3), ("fp8", 2), ("stack", 8),
                               ("confidence", 9)):  # fmt: skip
        table.add_column(header, no_wrap=header == "key", drop_order=drop_order)
    for chip in chips:
        table.add_row(
            chip.key, chip.vendor, chip.architecture,
            quantity(chip.memory_gib), quantity(chip.memory_bandwidth_gbps),
            *(quantity(chip.peak_tflops(d)) for d in ("fp32", "tf32", "bf16", "fp16", "fp8")),
            chip.software_stack, chip.confidence,
        )  # fmt: skip
    print_table(table)


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    import perdollar.cli.catalog_gpus_cmd
    import perdollar.cli.catalog_quotas_cmd
    import perdollar.cli.catalog_refresh_cmd
    import perdollar.cli.catalog_sources_cmd  # noqa: F401 (its commands join catalog_app)

    app.add_typer(catalog_app, name="catalog")
