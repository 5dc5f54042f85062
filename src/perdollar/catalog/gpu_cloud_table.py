"""The bundled GPU clouds' prices: ``gpu_cloud_offers.csv``, one dated and sourced row per offer.

GPU clouds (Lambda, RunPod, Nebius, CoreWeave, Hyperstack, Vultr, …) publish no price feed that
the offline build can read, so their list prices are kept by hand in a table: one row per
(provider, machine, location, market), with the machine's name as the page lists it, the price as
the provider lists it (per GPU-hour or per machine-hour) and per machine-hour, the machine's GPUs,
vCPUs and memory as published, the page the figures come from and the date they were read from it.
A machine is named by one token (``h100-sxm-x8``), so that a configuration (``2x h100-sxm-x8
(lambda any)``) can name it as it names any other. The build turns the rows into
gpuhunt-format rows, so the same mapping that a refresh uses makes each GPU cloud's machines.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
import re
from dataclasses import dataclass
from pathlib import Path

from perdollar.catalog.gpuhunt_rows import GpuhuntRow
from perdollar.vocabulary import MARKETS

GPU_CLOUD_OFFERS = Path(__file__).with_name("gpu_cloud_offers.csv")
COLUMNS = (
    "provider", "machine", "listed_as", "location", "market", "usd_per_hour", "listed_price", "listed_per",
    "gpu_name", "gpu_count", "gpu_memory_gb", "vcpus", "memory", "memory_unit", "source_url",
    "read_on", "transcription", "notes",
)  # fmt: skip
LISTED_PER = ("gpu-hour", "machine-hour")
# Memory as the provider states it → decimal GB, the unit gpuhunt's rows carry.
GB_PER_UNIT = {"GB": 1.0, "GiB": 2**30 / 1e9}
# How a bundled GPU-cloud price was obtained (an offer's price_basis is this, ":", the cloud).
GPU_CLOUD_PRICE_BASIS = "provider_price_list"
# One token, as the configuration grammar reads an instance name.
MACHINE_NAME = re.compile(r"[a-z][a-z0-9.+-]*")


@dataclass(frozen=True, slots=True)
class GpuCloudOffer:
    """One row of the table: a provider's list price for one machine in one location and market."""

    provider: str  # the cloud's name in perdollar (lambda, runpod, …)
    machine: str  # one token: the product and its GPU count (h100-sxm-x8)
    listed_as: str  # the name the provider's page gives it
    location: str  # the provider's region, or "any" where it prices every region alike
    market: str
    usd_per_hour: float  # per machine-hour
    listed_price: float  # as the page lists it, per ``listed_per``
    listed_per: str
    gpu_name: str  # the chip's family as gpuhunt names it (H100, B200, MI300X, …)
    gpu_count: int
    gpu_memory_gb: float
    vcpus: float
    memory: float
    memory_unit: str
    source_url: str
    read_on: dt.date
    transcription: str  # where the page's figures were transcribed, when not read from the page itself
    notes: str

    def gpuhunt_row(self) -> GpuhuntRow:
        return GpuhuntRow(
            instance_name=self.machine,
            location=self.location,
            price=self.usd_per_hour,
            cpu=self.vcpus,
            memory_gb=self.memory * GB_PER_UNIT[self.memory_unit],
            gpu_count=float(self.gpu_count),
            gpu_name=self.gpu_name,
            gpu_memory_gb=self.gpu_memory_gb,
            spot=self.market == "spot",
        )


def _number(text: str, where: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{where}: {column} {text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: {column} {text!r} is not a positive number")
    return value


def _offer(row: dict[str, str], where: str) -> GpuCloudOffer:
    missing = [c for c in COLUMNS if c != "notes" and not (row.get(c) or "").strip()]
    if missing:
        raise ValueError(f"{where}: {', '.join(missing)} empty")
    if not MACHINE_NAME.fullmatch(row["machine"]):
        raise ValueError(
            f"{where}: machine {row['machine']!r} is not one lower-case token (letters, digits, - . +)"
        )
    if row["market"] not in MARKETS:
        raise ValueError(f"{where}: market {row['market']!r} is not one of {', '.join(MARKETS)}")
    if row["listed_per"] not in LISTED_PER:
        raise ValueError(f"{where}: listed_per {row['listed_per']!r} is not one of {', '.join(LISTED_PER)}")
    if row["memory_unit"] not in GB_PER_UNIT:
        raise ValueError(f"{where}: memory_unit {row['memory_unit']!r} is not GB or GiB")
    if not row["source_url"].startswith("https://"):
        raise ValueError(f"{where}: source_url {row['source_url']!r} is not an https address")
    try:
        read_on = dt.date.fromisoformat(row["read_on"])
    except ValueError:
        raise ValueError(f"{where}: read_on {row['read_on']!r} is not a date (YYYY-MM-DD)") from None
    count = _number(row["gpu_count"], where, "gpu_count")
    listed = _number(row["listed_price"], where, "listed_price")
    price = _number(row["usd_per_hour"], where, "usd_per_hour")
    per_machine = listed * count if row["listed_per"] == "gpu-hour" else listed
    if not math.isclose(price, per_machine, rel_tol=1e-9):
        raise ValueError(
            f"{where}: usd_per_hour {price:g} is not the listed {listed:g} per {row['listed_per']} "
            f"for {count:g} GPU(s) ({per_machine:g})"
        )
    return GpuCloudOffer(
        provider=row["provider"], machine=row["machine"], listed_as=row["listed_as"],
        location=row["location"], market=row["market"],
        usd_per_hour=price, listed_price=listed, listed_per=row["listed_per"], gpu_name=row["gpu_name"],
        gpu_count=int(count), gpu_memory_gb=_number(row["gpu_memory_gb"], where, "gpu_memory_gb"),
        vcpus=_number(row["vcpus"], where, "vcpus"), memory=_number(row["memory"], where, "memory"),
        memory_unit=row["memory_unit"], source_url=row["source_url"], read_on=read_on,
        transcription=row["transcription"], notes=row.get("notes") or "",
    )  # fmt: skip


def read_gpu_cloud_offers(path: Path = GPU_CLOUD_OFFERS) -> tuple[GpuCloudOffer, ...]:
    """Every row of the table, checked; a ValueError names the row and the value that is wrong."""
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"{path.name}: the header is not {','.join(COLUMNS)}")
        offers = [_offer(row, f"{path.name} row {number}") for number, row in enumerate(reader, start=2)]
    seen: set[tuple[str, str, str, str]] = set()
    for number, offer in enumerate(offers, start=2):
        key = (offer.provider, offer.machine, offer.location, offer.market)
        if key in seen:
            raise ValueError(f"{path.name} row {number}: {' / '.join(key)} is listed twice")
        seen.add(key)
    return tuple(offers)
