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
import math
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdollar.errors import PerdollarError
from perdollar.files import read_user_bytes

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


# A provider's file is data from outside: read at most this much of it (a real provider CSV is a few
# MB; a zip member that expands past this is refused, not decompressed into memory).
MAX_FILE_BYTES = 128 * 2**20
# What a row's numbers may be; anything outside is a broken or hostile file, not an offer. Wide enough
# for a whole TPU pod (thousands of chips, tens of thousands of $/h): implausible prices within it are
# flagged as outliers when the catalog loads, not refused here.
RANGES = {"price": (0.0, 1_000_000.0), "cpu": (0.0, 1_000_000.0), "memory": (0.0, 100_000_000.0),
          "gpu_count": (0.0, 100_000.0), "gpu_memory": (0.0, 100_000.0)}  # fmt: skip
MAX_NAME_CHARS = 200
# Names are printed in tables: no control characters (a newline would forge a row) and no square
# brackets (read as markup by the terminal renderer); no real provider name has either.
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f\[\]\\\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def _number(text: str, where: str, column: str) -> float:
    try:
        value = float(text) if text.strip() else 0.0
    except ValueError:
        raise ValueError(f"{where}: {column} {text!r} is not a number") from None
    return _in_range(value, where, column)


def _in_range(value: float, where: str, column: str) -> float:
    low, high = RANGES[column]
    if not math.isfinite(value) or not low <= value <= high:
        raise ValueError(f"{where}: {column} {value!r} is outside {low:g} to {high:g}")
    return value


def checked_rows(rows: tuple[GpuhuntRow, ...], where: str) -> tuple[GpuhuntRow, ...]:
    """Rows that came typed (from gpuhunt itself) held to the same schema as a file's rows."""
    for number, row in enumerate(rows, start=1):
        at = f"{where} offer {number}"
        _name(row.instance_name, at, "instance_name")
        _name(row.location, at, "location")
        _name(row.gpu_name, at, "gpu_name", required=False)
        for column, value in (("price", row.price), ("cpu", row.cpu), ("memory", row.memory_gb),
                              ("gpu_count", row.gpu_count), ("gpu_memory", row.gpu_memory_gb)):  # fmt: skip
            _in_range(value, at, column)
    if not rows:
        raise ValueError(f"{where} has no priced offer")
    return rows


def _name(text: str | None, where: str, column: str, *, required: bool = True) -> str:
    value = (text or "").strip()
    if required and not value:
        raise ValueError(f"{where}: {column} is empty")
    if len(value) > MAX_NAME_CHARS or _UNSAFE_NAME.search(value):
        shown = value[:40].encode("unicode_escape").decode()
        raise ValueError(f"{where}: {column} {shown!r} has control characters, brackets or is too long")
    return value


def parse_rows(text: str, where: str) -> tuple[GpuhuntRow, ...]:
    """A provider's CSV text → rows; a ValueError names the file, row and value that is wrong.

    Every row is checked against the schema (names, number types and ranges): one bad row fails the
    whole file, so that provider keeps its previous offers rather than half of a broken list.
    """
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in REQUIRED_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{where} lacks column(s) {', '.join(missing)}")
    rows = []
    try:
        for number, row in enumerate(reader, start=2):
            at = f"{where} row {number}"
            if None in row or any(row[c] is None for c in REQUIRED_COLUMNS):
                raise ValueError(f"{at} does not have the header's number of cells")
            spot = row["spot"].strip().lower()
            if spot not in ("true", "false"):
                raise ValueError(f"{at}: spot {row['spot']!r} is not True or False")
            price = _number(row["price"], at, "price")
            parsed = GpuhuntRow(
                instance_name=_name(row["instance_name"], at, "instance_name"),
                location=_name(row["location"], at, "location"), price=price,
                cpu=_number(row["cpu"], at, "cpu"), memory_gb=_number(row["memory"], at, "memory"),
                gpu_count=_number(row["gpu_count"], at, "gpu_count"),
                gpu_name=_name(row["gpu_name"], at, "gpu_name", required=False),
                gpu_memory_gb=_number(row["gpu_memory"] or "", at, "gpu_memory"), spot=spot == "true",
                gpu_vendor=_name(row.get("gpu_vendor"), at, "gpu_vendor", required=False).lower(),
            )  # fmt: skip
            if price > 0:  # gpuhunt lists some shapes without a price; nothing to rank
                rows.append(parsed)
    except csv.Error as error:
        raise ValueError(f"{where} is not a readable CSV ({error})") from None
    if not rows:
        raise ValueError(f"{where} has no priced offer")
    return tuple(rows)


def _read_limited(file: Path) -> str:
    """A provider file's text, refused (ValueError) if it is not a regular file or is too large."""
    try:
        data = read_user_bytes(file, "gpuhunt file", MAX_FILE_BYTES, "give gpuhunt's provider CSV")
    except PerdollarError as error:
        raise ValueError(error.problem) from None
    return data.decode("utf-8", "replace")


def _zip_texts(file: Path, texts: dict[str, tuple[str, str, Path]], problems: dict[str, str]) -> None:
    try:
        status = file.stat()
        if not stat.S_ISREG(status.st_mode):
            raise PerdollarError(f"{file} is not a regular file", "give gpuhunt's catalog.zip")
        with zipfile.ZipFile(file) as archive:
            for info in archive.infolist():
                stem = Path(info.filename).stem
                if not info.filename.endswith(".csv") or stem not in PROVIDERS:
                    continue
                where = f"{file}:{info.filename}"
                if info.file_size > MAX_FILE_BYTES:
                    problems[stem] = f"{where} expands to more than {MAX_FILE_BYTES // 2**20} MiB"
                    continue
                with archive.open(info) as member:  # the declared size may lie: read no more than allowed
                    data = member.read(MAX_FILE_BYTES + 1)
                if len(data) > MAX_FILE_BYTES:
                    problems[stem] = f"{where} expands to more than {MAX_FILE_BYTES // 2**20} MiB"
                    continue
                texts[stem] = (data.decode("utf-8", "replace"), where, file)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, zlib.error) as error:
        raise PerdollarError(
            f"{file} is not a readable zip file ({error})", "give gpuhunt's catalog.zip"
        ) from None
    except OSError as error:
        raise PerdollarError(
            f"{file} cannot be read ({error.strerror or error})", "give gpuhunt's catalog.zip"
        ) from None


def _texts_at(path: Path) -> tuple[dict[str, tuple[str, str, Path]], dict[str, str]]:
    """{provider: (CSV text, where, file)} from a CSV file, a zip of CSVs, or a folder of either, and
    {provider: why} for provider files that could not be read."""
    if not path.exists():
        raise PerdollarError(f"gpuhunt catalog {path} does not exist", "give a folder, a .zip or a .csv")
    if not path.is_dir() and not path.is_file():
        raise PerdollarError(f"gpuhunt catalog {path} is not a regular file or a folder",
                             "give a folder, a .zip or a .csv")  # fmt: skip
    files = sorted(path.iterdir()) if path.is_dir() else [path]
    texts: dict[str, tuple[str, str, Path]] = {}
    problems: dict[str, str] = {}
    for file in files:
        if file.suffix == ".csv" and file.stem in PROVIDERS:
            try:
                texts[file.stem] = (_read_limited(file), str(file), file)
            except ValueError as error:
                problems[file.stem] = str(error)
        elif file.suffix == ".zip" and file.is_file():
            _zip_texts(file, texts, problems)
    if not texts and not problems:
        raise PerdollarError(
            f"no gpuhunt catalog file in {path}",
            "expected provider CSVs (aws.csv, gcp.csv, azure.csv, runpod.csv, …) or a zip of them",
        )
    return texts, problems


def read_catalog_files(
    path: Path, providers: list[str], captured_at: dt.date | None = None
) -> tuple[list[ProviderOffers], dict[str, str]]:
    """Offers per provider from local gpuhunt catalog files, and {provider: why} for those unreadable.

    Each provider's capture date is ``captured_at`` or, by default, its file's modification date.
    """
    texts, problems = _texts_at(path)
    offers, failed = [], {}
    for provider in providers or [*texts, *(p for p in problems if p not in texts)]:
        if provider in problems and provider not in texts:
            failed[provider] = problems[provider]
            continue
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
            fetched = _fetch_online(provider, today)
            offers.append(ProviderOffers(provider, checked_rows(fetched.rows, provider), today))
        except ValueError as error:
            failed[provider] = str(error)
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
            f"could not download gpuhunt's catalogs ({_root_cause(error)})",
            "check your network, or use --from PATH",
        ) from error
    for provider in published:
        loaded = catalog.catalog.get(provider)
        if loaded is None:
            failed[provider] = "gpuhunt could not download its catalog"
            continue
        try:
            rows = checked_rows(
                tuple(_row_of(item) for item in loaded.items if float(item.price or 0) > 0),
                f"gpuhunt's {provider} catalog",
            )
        except (ValueError, TypeError) as error:
            failed[provider] = str(error)
            continue
        offers.append(ProviderOffers(provider, rows, _version_date(str(loaded.version), today)))
    return offers, failed


def _root_cause(error: BaseException) -> str:
    """The innermost reason behind a library's error ("Name or service not known", not "Failed to load")."""
    inner, seen = error, {id(error)}
    while (nxt := inner.__cause__ or inner.__context__) is not None and id(nxt) not in seen:
        inner = nxt
        seen.add(id(inner))
    reason = getattr(inner, "reason", None) or getattr(inner, "strerror", None) or inner
    return str(reason).strip() or type(inner).__name__


def _or_fail(
    offers: list[ProviderOffers], failed: dict[str, str]
) -> tuple[list[ProviderOffers], dict[str, str]]:
    if not offers:
        why = "; ".join(f"{p}: {reason}" for p, reason in failed.items())
        raise PerdollarError(f"could not fetch any offers ({why})", "check your network, or use --from PATH")
    return offers, failed
