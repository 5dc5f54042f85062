"""Offers in gpuhunt's catalog format: read from files, or fetched through gpuhunt (the one network edge).

gpuhunt (dstack's offers library) publishes one CSV per provider (``aws.csv``, ``gcp.csv``,
``azure.csv``, ``lambdalabs.csv``, ``runpod.csv``, …; each zipped as ``catalog.zip``) with the
columns ``instance_name, location, price, cpu, memory, gpu_count, gpu_name, gpu_memory, spot,
disk_size, gpu_vendor, flags``. Memory figures are GB as the provider states them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError

# gpuhunt provider name → the cloud name perdollar uses.
PROVIDERS = {
    "aws": "aws",
    "gcp": "gcp",
    "azure": "azure",
    "lambdalabs": "lambda",
    "runpod": "runpod",
    "nebius": "nebius",
    "oci": "oci",
    "verda": "verda",
    "cloudrift": "cloudrift",
    "vastai": "vastai",
}
# Providers gpuhunt asks live (no published catalog file); each is one public API call.
ONLINE_PROVIDERS = ("vastai",)
REQUIRED_COLUMNS = ("instance_name", "location", "price", "cpu", "memory", "gpu_count", "gpu_name",
                    "gpu_memory", "spot")  # fmt: skip
INSTALL_FIX = "install it with pip install 'perdollar[prices]', or refresh from files with --from PATH"


@dataclass(frozen=True, slots=True)
class GpuhuntRow:
    """One gpuhunt catalog row, typed (a provider's offer of one machine in one location)."""

    instance_name: str
    location: str
    price: float
    cpu: float
    memory_gb: float
    gpu_count: float
    gpu_name: str
    gpu_memory_gb: float
    spot: bool
    gpu_vendor: str = ""


@dataclass(frozen=True, slots=True)
class ProviderOffers:
    provider: str  # gpuhunt's name
    rows: tuple[GpuhuntRow, ...]
    captured_at: dt.date


def provider_name(name: str) -> str:
    """gpuhunt's provider name for what the user typed ("lambda" and "lambdalabs" both work)."""
    wanted = name.strip().lower()
    for provider, cloud in PROVIDERS.items():
        if wanted in (provider, cloud):
            return provider
    raise PerdollarError(f"unknown provider {name!r}", f"use one of {', '.join(sorted(PROVIDERS))}")


def _number(text: str, where: str, column: str) -> float:
    try:
        return float(text) if text.strip() else 0.0
    except ValueError:
        raise ValueError(f"{where}: {column} {text!r} is not a number") from None


def parse_rows(text: str, where: str) -> tuple[GpuhuntRow, ...]:
    """A provider's CSV text → rows; a ValueError names the file, row and value that is wrong."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{where} lacks column(s) {', '.join(missing)}")
    rows = []
    for number, row in enumerate(reader, start=2):
        at = f"{where} row {number}"
        spot = row["spot"].strip().lower()
        if spot not in ("true", "false"):
            raise ValueError(f"{at}: spot {row['spot']!r} is not True or False")
        price = _number(row["price"], at, "price")
        if price <= 0:
            continue  # gpuhunt lists some shapes without a price; nothing to rank
        rows.append(
            GpuhuntRow(
                instance_name=row["instance_name"].strip(), location=row["location"].strip(), price=price,
                cpu=_number(row["cpu"], at, "cpu"), memory_gb=_number(row["memory"], at, "memory"),
                gpu_count=_number(row["gpu_count"], at, "gpu_count"),
                gpu_name=(row["gpu_name"] or "").strip(),
                gpu_memory_gb=_number(row["gpu_memory"] or "", at, "gpu_memory"), spot=spot == "true",
                gpu_vendor=(row.get("gpu_vendor") or "").strip().lower(),
            )
        )  # fmt: skip
    return tuple(rows)


def _texts_at(path: Path) -> dict[str, tuple[str, str, Path]]:
    """{provider: (CSV text, where, file)} from a CSV file, a zip of CSVs, or a folder of either."""
    if not path.exists():
        raise PerdollarError(f"gpuhunt catalog {path} does not exist", "give a folder, a .zip or a .csv")
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    texts: dict[str, tuple[str, str, Path]] = {}
    for file in files:
        if file.suffix == ".csv" and file.stem in PROVIDERS:
            texts[file.stem] = (file.read_text(encoding="utf-8", errors="replace"), str(file), file)
        elif file.suffix == ".zip":
            try:
                with zipfile.ZipFile(file) as archive:
                    for member in archive.namelist():
                        stem = Path(member).stem
                        if member.endswith(".csv") and stem in PROVIDERS:
                            text = archive.read(member).decode("utf-8", "replace")
                            texts[stem] = (text, f"{file}:{member}", file)
            except zipfile.BadZipFile:
                raise PerdollarError(f"{file} is not a zip file", "give gpuhunt's catalog.zip") from None
    if not texts:
        raise PerdollarError(
            f"no gpuhunt catalog file in {path}",
            "expected provider CSVs (aws.csv, gcp.csv, azure.csv, runpod.csv, …) or a zip of them",
        )
    return texts


def read_catalog_files(
    path: Path, providers: list[str], captured_at: dt.date | None = None
) -> tuple[list[ProviderOffers], dict[str, str]]:
    """Offers per provider from local gpuhunt catalog files, and {provider: why} for those unreadable.

    Each provider's capture date is ``captured_at`` or, by default, its file's modification date.
    """
    texts = _texts_at(path)
    offers, failed = [], {}
    for provider in providers or list(texts):
        if provider not in texts:
            failed[provider] = f"no {provider}.csv in {path}"
            continue
        text, where, file = texts[provider]
        try:
            rows = parse_rows(text, where)
        except ValueError as error:
            failed[provider] = str(error)
            continue
        day = captured_at or dt.datetime.fromtimestamp(file.stat().st_mtime, dt.UTC).date()
        offers.append(ProviderOffers(provider, rows, day))
    return offers, failed


def _version_date(version: str, today: dt.date) -> dt.date:
    match = re.match(r"(\d{4})(\d{2})(\d{2})", version or "")
    return dt.date(int(match[1]), int(match[2]), int(match[3])) if match else today


def _row_of(item: Any) -> GpuhuntRow:
    vendor = getattr(item, "gpu_vendor", None)
    return GpuhuntRow(
        instance_name=str(item.instance_name), location=str(item.location), price=float(item.price),
        cpu=float(item.cpu), memory_gb=float(item.memory), gpu_count=float(item.gpu_count or 0),
        gpu_name=str(item.gpu_name or ""), gpu_memory_gb=float(item.gpu_memory or 0.0), spot=bool(item.spot),
        gpu_vendor=str(getattr(vendor, "value", vendor) or "").lower(),
    )  # fmt: skip


def _fetch_online(provider: str, today: dt.date) -> ProviderOffers:
    from gpuhunt.providers.vastai import VastAIProvider

    items = VastAIProvider().get(balance_resources=False)  # the marketplace's offers right now
    return ProviderOffers(provider, tuple(_row_of(i) for i in items if float(i.price or 0) > 0), today)


def fetch_gpuhunt(providers: list[str], today: dt.date) -> tuple[list[ProviderOffers], dict[str, str]]:
    """Download the current catalogs through gpuhunt (no credentials); {provider: why} for failures."""
    try:
        import gpuhunt
    except ImportError:
        raise PerdollarError("gpuhunt is not installed", INSTALL_FIX) from None
    offers, failed = [], {}
    for provider in (p for p in providers if p in ONLINE_PROVIDERS):
        try:
            offers.append(_fetch_online(provider, today))
        except Exception as error:  # requests' errors, an unexpected answer: that provider is down
            failed[provider] = f"its API did not answer usably ({type(error).__name__})"
    published = [p for p in providers if p not in ONLINE_PROVIDERS]
    if not published:
        return _or_fail(offers, failed)
    catalog = gpuhunt.Catalog(balance_resources=False, auto_reload=False)
    try:
        catalog.load()
    except Exception as error:  # gpuhunt raises its own error, urllib's or a socket's
        if offers:
            return offers, failed | {p: "gpuhunt could not download its catalog" for p in published}
        raise PerdollarError(
            f"could not download gpuhunt's catalogs ({error})", "check your network, or use --from PATH"
        ) from None
    for provider in published:
        loaded = catalog.catalog.get(provider)
        if loaded is None:
            failed[provider] = "gpuhunt could not download its catalog"
            continue
        rows = tuple(_row_of(item) for item in loaded.items if float(item.price or 0) > 0)
        offers.append(ProviderOffers(provider, rows, _version_date(str(loaded.version), today)))
    return offers, failed


def _or_fail(
    offers: list[ProviderOffers], failed: dict[str, str]
) -> tuple[list[ProviderOffers], dict[str, str]]:
    if not offers:
        why = "; ".join(f"{p}: {reason}" for p, reason in failed.items())
        raise PerdollarError(f"could not fetch any offers ({why})", "check your network, or use --from PATH")
    return offers, failed
