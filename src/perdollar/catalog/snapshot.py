"""The on-disk snapshot format: read (with row-level validation) and write.

A snapshot is a folder:

* ``manifest.json``: snapshot id, capture dates, sources, conventions, flag meanings;
* ``accelerators.csv``: one row per chip (per-device figures);
* ``aliases.csv``: other names of a chip (cloud catalog names, names measurements use);
* ``instance_types.csv.gz``: one row per (cloud, instance type);
* ``offers.csv.gz``: one row per (cloud, instance type, region, market).

Every problem names the file, the row and the value, so a broken file can be fixed by hand.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
import re
from pathlib import Path

from perdollar.catalog.catalog import HARDWARE_COLUMNS, Catalog
from perdollar.catalog.csv_rows import REBUILD_FIX, Rows, choice_cell, number_cell, optional
from perdollar.catalog.model import Accelerator, InstanceType, Offer, SoftwareStack
from perdollar.catalog.names import parse_instance_name
from perdollar.catalog.price_outliers import with_outlier_flags
from perdollar.catalog.standard_prices import with_standard_price_flags
from perdollar.errors import PerdollarError
from perdollar.jsonable import JsonObject
from perdollar.vocabulary import MARKETS, checked_word

MANIFEST = "manifest.json"
ACCELERATORS = "accelerators.csv"
ALIASES = "aliases.csv"
INSTANCE_TYPES = "instance_types.csv.gz"
OFFERS = "offers.csv.gz"
FILES = (MANIFEST, ACCELERATORS, ALIASES, INSTANCE_TYPES, OFFERS)

STACKS: tuple[SoftwareStack, ...] = ("cuda", "rocm", "neuron", "xla", "habana", "qaic", "cpu")

ACCELERATOR_COLUMNS = (
    "key",
    "vendor",
    "family",
    "architecture",
    "memory_gib",
    "memory_bandwidth_gbps",
    "peak_fp32_tflops",
    "peak_tf32_tflops",
    "peak_fp16_tflops",
    "peak_bf16_tflops",
    "peak_fp8_tflops",
    "peak_int8_tops",
    "interconnect",
    "interconnect_bandwidth_gbps",
    "software_stack",
    "tdp_w",
    "compute_capability",
    "sm_count",
    "boost_clock_mhz",
    "form_factor",
    "confidence",
    "source",
)
ALIAS_COLUMNS = ("alias", "accelerator_key", "kind")
INSTANCE_COLUMNS = ("cloud", "name", *HARDWARE_COLUMNS, "local_disk_gb")
# Columns added later: written always, read when present (older snapshots still load).
INSTANCE_LATER_COLUMNS = ("excluded_reason",)
CLOUD_NAME = re.compile(r"[a-z][a-z0-9-]*")
OFFER_COLUMNS = (
    "cloud",
    "instance_type",
    "region",
    "market",
    "price_per_hour",
    "price_max_per_hour",
    "captured_at",
    "price_basis",
    "interruption_bucket",
    "flags",
)
OFFER_LATER_COLUMNS = ("price_min_per_hour",)


def cloud_cell(rows: Rows, number: int, row: dict[str, str]) -> str:
    """Every provider name is a cloud (aws, gcp, azure, lambda, runpod, …), spelt in lower case."""
    value = row["cloud"].strip()
    if not CLOUD_NAME.fullmatch(value):
        raise rows.fail(number, "cloud", value, "is not a cloud name (lower-case letters, digits, -)")
    return value


def _read_accelerators(folder: Path) -> dict[str, Accelerator]:
    rows = Rows(folder / ACCELERATORS, ACCELERATOR_COLUMNS)
    result: dict[str, Accelerator] = {}
    for number, row in rows:
        num = functools.partial(number_cell, rows, number, row)
        key = row["key"].strip()
        if not key:
            raise rows.fail(number, "key", key, "is empty")
        sm_count = num("sm_count", optional=True)
        result[key] = Accelerator(
            key=key,
            vendor=row["vendor"],
            family=row["family"],
            architecture=row["architecture"],
            memory_gib=num("memory_gib"),
            memory_bandwidth_gbps=num("memory_bandwidth_gbps", optional=True),
            peak_fp32_tflops=optional(num("peak_fp32_tflops", optional=True)),
            peak_tf32_tflops=optional(num("peak_tf32_tflops", optional=True)),
            peak_fp16_tflops=optional(num("peak_fp16_tflops", optional=True)),
            peak_bf16_tflops=optional(num("peak_bf16_tflops", optional=True)),
            peak_fp8_tflops=optional(num("peak_fp8_tflops", optional=True)),
            peak_int8_tops=optional(num("peak_int8_tops", optional=True)),
            interconnect=row["interconnect"],
            interconnect_bandwidth_gbps=optional(num("interconnect_bandwidth_gbps", optional=True)),
            software_stack=choice_cell(rows, number, row, "software_stack", STACKS),
            tdp_w=optional(num("tdp_w", optional=True)),
            compute_capability=row["compute_capability"] or None,
            sm_count=None if math.isnan(sm_count) else int(sm_count),
            boost_clock_mhz=optional(num("boost_clock_mhz", optional=True)),
            # optional column: snapshots written before it existed still load
            memory_type=row.get("memory_type") or None,
            form_factor=row["form_factor"] or None,
            confidence=row["confidence"] or "high",
            source=row["source"],
        )
    if not result:
        raise PerdollarError(f"catalog file {rows.path} has no accelerators", REBUILD_FIX)
    return result


def _read_aliases(folder: Path, accelerators: dict[str, Accelerator]) -> dict[str, str]:
    rows = Rows(folder / ALIASES, ALIAS_COLUMNS)
    aliases: dict[str, str] = {}
    for number, row in rows:
        key = row["accelerator_key"].strip()
        if key not in accelerators:
            raise rows.fail(number, "accelerator_key", key, "is not in accelerators.csv")
        aliases[row["alias"].strip()] = key
    return aliases


def _read_instance_types(
    folder: Path, accelerators: dict[str, Accelerator]
) -> dict[tuple[str, str], InstanceType]:
    rows = Rows(folder / INSTANCE_TYPES, INSTANCE_COLUMNS)
    result: dict[tuple[str, str], InstanceType] = {}
    for number, row in rows:
        num = functools.partial(number_cell, rows, number, row)
        cloud = cloud_cell(rows, number, row)
        name = row["name"].strip()
        key = row["accelerator_key"].strip() or None
        if key is not None and key not in accelerators:
            raise rows.fail(number, "accelerator_key", key, "is not in accelerators.csv")
        try:
            parts = parse_instance_name(name, cloud)
        except PerdollarError:
            parts = None  # an unusual name is still a valid machine; it just has no parsed shape
        efa = num("efa_interfaces", optional=True)
        result[(cloud, name)] = InstanceType(
            cloud=cloud,
            name=name,
            vcpus=num("vcpus", optional=True),
            memory_gib=num("memory_gib", optional=True),
            arch=row["arch"] or "amd64",
            accelerator_name=row["accelerator_name"] or None,
            accelerator_key=key,
            accelerator_count=num("accelerator_count"),
            accelerator_memory_gib_total=num("accelerator_memory_gib_total"),
            network_gbps=optional(num("network_gbps", optional=True)),
            efa_interfaces=0 if math.isnan(efa) else int(efa),
            local_disk_gb=optional(num("local_disk_gb", optional=True)),
            name_parts=parts,
            excluded_reason=row.get("excluded_reason", "").strip(),
        )
    return result


def _read_offers(folder: Path, instance_types: dict[tuple[str, str], InstanceType]) -> list[Offer]:
    rows = Rows(folder / OFFERS, OFFER_COLUMNS)
    offers: list[Offer] = []
    dates: dict[str, dt.date] = {}
    flag_sets: dict[str, tuple[str, ...]] = {"": ()}
    positions: list[int] = []
    low_at: int | None = None
    for number, cells in rows.cells():
        if not positions:
            positions = [rows.header.index(column) for column in OFFER_COLUMNS]
            low_at = rows.header.index("price_min_per_hour") if "price_min_per_hour" in rows.header else None
        cloud, name, region, market, price, high, captured, basis, bucket, flags = (
            cells[i] for i in positions
        )
        low = cells[low_at] if low_at is not None else ""
        # Fast path for well-formed rows; anything unusual goes through the checks that name the problem.
        try:
            price_value = float(price)
            high_value = float(high) if high else None
            low_value = float(low) if low else None
            day = dates.get(captured) or dates.setdefault(captured, dt.date.fromisoformat(captured))
            market_word = checked_word(market, MARKETS)
            well_formed = (
                price_value >= 0
                and (high_value is None or high_value >= 0)
                and (low_value is None or low_value >= 0)
                and region != ""
                and (cloud, name) in instance_types
            )
        except ValueError:
            well_formed = False
        if not well_formed:
            offers.append(
                _checked_offer(rows, number, dict(zip(rows.header, cells, strict=True)), instance_types)
            )
            continue
        if flags not in flag_sets:
            flag_sets[flags] = tuple(f for f in flags.split(";") if f)
        offers.append(
            Offer(
                cloud,
                name,
                region,
                market_word,
                price_value,
                day,
                high_value,
                basis,
                bucket or None,
                flag_sets[flags],
                low_value,
            )
        )
    return offers


def _checked_offer(
    rows: Rows, number: int, row: dict[str, str], instance_types: dict[tuple[str, str], InstanceType]
) -> Offer:
    cloud = cloud_cell(rows, number, row)
    name = row["instance_type"].strip()
    if (cloud, name) not in instance_types:
        raise rows.fail(number, "instance_type", name, f"is not in {INSTANCE_TYPES} for {cloud}")
    text = row["captured_at"].strip()
    try:
        captured = dt.date.fromisoformat(text[:10])
    except ValueError:
        raise rows.fail(number, "captured_at", text, "is not a date (YYYY-MM-DD)") from None
    region = row["region"].strip()
    if not region:
        raise rows.fail(number, "region", region, "is empty")
    return Offer(
        cloud=cloud,
        instance_type=name,
        region=region,
        market=choice_cell(rows, number, row, "market", MARKETS),
        price_per_hour=number_cell(rows, number, row, "price_per_hour"),
        captured_at=captured,
        price_max_per_hour=optional(number_cell(rows, number, row, "price_max_per_hour", optional=True)),
        price_min_per_hour=(
            optional(number_cell(rows, number, row, "price_min_per_hour", optional=True))
            if "price_min_per_hour" in row
            else None
        ),
        price_basis=row["price_basis"],
        interruption_bucket=row["interruption_bucket"] or None,
        flags=tuple(f for f in row["flags"].split(";") if f),
    )


def read_manifest(folder: Path) -> JsonObject:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise PerdollarError(f"catalog file {path} is missing", REBUILD_FIX) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise PerdollarError(
            f"catalog file {path} is not valid JSON ({error.args[0]})", REBUILD_FIX
        ) from None
    if not isinstance(manifest, dict) or "snapshot_id" not in manifest:
        raise PerdollarError(f"catalog file {path} has no snapshot_id", REBUILD_FIX)
    return manifest


def read_snapshot(folder: Path) -> Catalog:
    """Load and validate one snapshot folder."""
    if not folder.is_dir():
        raise PerdollarError(f"catalog snapshot {folder} is missing", REBUILD_FIX)
    manifest = read_manifest(folder)
    accelerators = _read_accelerators(folder)
    aliases = _read_aliases(folder, accelerators)
    instance_types = _read_instance_types(folder, accelerators)
    offers = with_outlier_flags(_read_offers(folder, instance_types), instance_types)
    offers = with_standard_price_flags(offers)
    captured_at = str(manifest.get("captured_at") or max((o.captured_at for o in offers), default="")).strip()
    return Catalog(
        accelerators=accelerators,
        instance_types=instance_types,
        offers=tuple(offers),
        captured_at=captured_at,
        snapshot_id=str(manifest["snapshot_id"]),
        aliases=aliases,
        manifest=manifest,
        path=folder,
    )
