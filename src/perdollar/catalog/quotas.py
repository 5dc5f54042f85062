"""GPU quotas per cloud, region and instance family.

A quotas file is a CSV ``cloud,region,family,gpus``: ``region`` ``*`` means every region and
``family`` is the cloud's own name for it (``p5``, ``a3``, ``NDv5``; shell patterns such as
``p*`` work too). A candidate needs ``machines × GPUs per machine``; where that is more than the
quota of its cloud, region and family it cannot be launched. Where several rows match, the
smallest quota applies.
"""

from __future__ import annotations

import csv
import difflib
import fnmatch
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.files import read_user_text

QUOTA_COLUMNS = ("cloud", "region", "family", "gpus")
_AZURE_SERIES = re.compile(r"^(?:standard_)?([a-z]+)\d*[a-z]*(?:_[a-z0-9]+)*?(?:_(v\d+))?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Quota:
    cloud: str
    region: str  # "*": every region
    family: str  # lower case; may be a shell pattern
    gpus: float
    row: int = field(default=0, compare=False)  # its row in the quotas file (1: the header)

    def applies(self, cloud: str, region: str, family: str) -> bool:
        return (
            cloud.lower() == self.cloud
            and (self.region == "*" or fnmatch.fnmatch(region.lower(), self.region))
            and fnmatch.fnmatch(family.lower(), self.family)
        )


def instance_family(cloud: str, instance_type: str) -> str:
    """The family a cloud sets quotas by: ``p5.48xlarge`` → p5, ``a3-highgpu-8g`` → a3,
    ``Standard_ND96isr_H100_v5`` → NDv5 (series letters and version)."""
    name = instance_type.strip()
    cloud = cloud.lower()
    if cloud == "aws":
        return name.removeprefix("ml.").split(".")[0]
    if cloud == "gcp":
        return name.split("-")[0]
    if cloud == "azure":
        match = _AZURE_SERIES.match(name)
        if match:
            return match[1].upper() + (match[2] or "")
    return name.split(".")[0].split("-")[0]


# A quotas file has a row per cloud, region and family: a few hundred rows, a few kilobytes.
QUOTAS_MAX_BYTES = 16 * 2**20
_QUOTAS_FIX = "give a CSV cloud,region,family,gpus (`perdollar catalog quotas --from-cloud aws` writes one)"


def read_quotas(path: Path) -> tuple[Quota, ...]:
    """The quotas of a CSV file, with one-line errors naming the file and row."""
    text = read_user_text(path, "quotas file", QUOTAS_MAX_BYTES, _QUOTAS_FIX)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [c for c in QUOTA_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise PerdollarError(
                f"quotas file {path} has no column {missing[0]!r}",
                "write a header cloud,region,family,gpus (region * = every region)",
            )
        rows = list(reader)
    except csv.Error as error:
        raise PerdollarError(f"quotas file {path} is not a readable CSV ({error})", _QUOTAS_FIX) from None
    quotas = []
    for number, row in enumerate(rows, start=2):
        short = [c for c in QUOTA_COLUMNS if row.get(c) is None]
        if short:
            raise PerdollarError(
                f"quotas file {path}, row {number} has no {short[0]} (fewer fields than the header)",
                "give every row cloud,region,family,gpus",
            )
        try:
            gpus = float(row["gpus"])
        except ValueError:
            gpus = math.nan
        if not gpus >= 0:
            raise PerdollarError(
                f"quotas file {path}, row {number}: gpus {row['gpus'][:40]!r} is not a count",
                "give a whole number of GPUs, 0 or more",
            )
        quotas.append(Quota(
            cloud=row["cloud"].strip().lower(), region=row["region"].strip().lower() or "*",
            family=row["family"].strip().lower(), gpus=gpus, row=number,
        ))  # fmt: skip
    return tuple(quotas)


# Names a cloud goes by that are not the catalog's: said as what was meant.
_CLOUD_ALIASES = {"ec2": "aws", "amazon": "aws", "sagemaker": "aws", "gce": "gcp", "google": "gcp"}


def check_known(path: Path, quotas: tuple[Quota, ...], machines: pd.DataFrame) -> None:
    """A one-line error for the first row that names no cloud, or no instance family, of the
    catalog's ``machines`` (cloud, instance_type): such a row would bind nothing, and the machine
    it was meant for would be recommended as if it had no quota."""
    names: dict[str, dict[str, str]] = {}  # cloud → lower-case instance name → its family
    for cloud, instance_type in zip(machines["cloud"], machines["instance_type"], strict=True):
        names.setdefault(str(cloud).lower(), {})[str(instance_type).lower()] = instance_family(
            str(cloud), str(instance_type)
        )
    for quota in quotas:
        where = f"quotas file {path}, row {quota.row}"
        if quota.cloud not in names:
            close = _CLOUD_ALIASES.get(quota.cloud) or next(
                iter(difflib.get_close_matches(quota.cloud, list(names), n=1)), None
            )
            fix = f"did you mean {close}?" if close else f"use one of {', '.join(names)}"
            raise PerdollarError(f"{where}: cloud {quota.cloud!r} is not a cloud of the catalog", fix)
        families = {family.lower(): family for family in sorted(set(names[quota.cloud].values()))}
        if any(fnmatch.fnmatch(family, quota.family) for family in families):
            continue
        meant = names[quota.cloud].get(quota.family)  # an instance type given for its family
        likely = [meant] if meant else [
            families[f] for f in difflib.get_close_matches(quota.family, list(families), n=3)
        ]  # fmt: skip
        shown = list(families.values())
        fix = f"did you mean {' or '.join(likely)}?" if likely else (
            f"write one of its families: {', '.join(shown[:12])}{' …' if len(shown) > 12 else ''}"
        )  # fmt: skip
        raise PerdollarError(
            f"{where}: {quota.family!r} is not an instance family of {quota.cloud} (the name before the size,"
            " as p5 for p5.48xlarge)",
            fix,
        )


def write_quotas(path: Path, quotas: tuple[Quota, ...]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(QUOTA_COLUMNS)
        for quota in quotas:
            writer.writerow([quota.cloud, quota.region, quota.family, f"{quota.gpus:g}"])


def quota_limit(quotas: tuple[Quota, ...], cloud: str, region: str, instance_type: str) -> Quota | None:
    """The smallest quota that applies to the machine in the region, or None where none does."""
    family = instance_family(cloud, instance_type)
    matching = [q for q in quotas if q.applies(cloud, region, family)]
    return min(matching, key=lambda q: q.gpus) if matching else None


def over_quota_reasons(
    frame: pd.DataFrame, quotas: tuple[Quota, ...], machines: pd.Series, gpus_per_machine: pd.Series
) -> list[str]:
    """Per row: why it exceeds its quota, or "" where it fits (or no quota applies)."""
    cache_: dict[tuple[str, str, str], Quota | None] = {}
    reasons = []
    for cloud, region, name, count, gpus in zip(
        frame["cloud"], frame["region"], frame["instance_type"], machines, gpus_per_machine, strict=True
    ):
        key = (str(cloud), str(region), str(name))
        if key not in cache_:
            cache_[key] = quota_limit(quotas, *key)
        quota = cache_[key]
        needed = float(count) * float(gpus or 0)
        if quota is None or not needed > quota.gpus:
            reasons.append("")
            continue
        family = instance_family(str(cloud), str(name))
        gpus_text = f"{needed:g} GPU" + ("" if needed == 1 else "s")
        where = "every region" if quota.region == "*" else str(region)
        reasons.append(f"needs {gpus_text}; the {family} quota in {where} is {quota.gpus:g} (--quotas)")
    return reasons
