"""GPU quotas per cloud, region and instance family, and the known capacity constraints.

A quotas file is a CSV ``cloud,region,family,gpus``: ``region`` ``*`` means every region and
``family`` is the cloud's own name for it (``p5``, ``a3``, ``NDv5``; shell patterns such as
``p*`` work too). A candidate needs ``machines × GPUs per machine``; where that is more than the
quota of its cloud, region and family it cannot be launched. Where several rows match, the
smallest quota applies.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import io
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.files import read_user_text

QUOTA_COLUMNS = ("cloud", "region", "family", "gpus")
CAPACITY_FILE = Path(__file__).with_name("capacity_constraints.csv")
_AZURE_SERIES = re.compile(r"^(?:standard_)?([a-z]+)\d*[a-z]*(?:_[a-z0-9]+)*?(?:_(v\d+))?$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Quota:
    cloud: str
    region: str  # "*": every region
    family: str  # lower case; may be a shell pattern
    gpus: float

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
            family=row["family"].strip().lower(), gpus=gpus,
        ))  # fmt: skip
    return tuple(quotas)


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


@dataclass(frozen=True, slots=True)
class CapacityConstraint:
    cloud: str
    instance_pattern: str
    flag: str
    meaning: str
    source: str
    as_of: dt.date


@cache
def capacity_constraints(path: Path = CAPACITY_FILE) -> tuple[CapacityConstraint, ...]:
    with path.open(newline="") as handle:
        return tuple(
            CapacityConstraint(
                cloud=row["cloud"],
                instance_pattern=row["instance_pattern"].lower(),
                flag=row["flag"],
                meaning=row["meaning"],
                source=row["source"],
                as_of=dt.date.fromisoformat(row["as_of"]),
            )
            for row in csv.DictReader(handle)
        )


def capacity_flags(cloud: str, instance_type: str) -> tuple[str, ...]:
    """The known capacity constraints of a machine (offered only as blocks or reservations)."""
    return tuple(
        c.flag
        for c in capacity_constraints()
        if c.cloud == cloud.lower() and fnmatch.fnmatch(instance_type.lower(), c.instance_pattern)
    )


def with_capacity_flags(offers: pd.DataFrame) -> pd.DataFrame:
    """``offers`` with each known capacity constraint added to its row's flags."""
    machines = offers[["cloud", "instance_type"]].drop_duplicates().itertuples(index=False)
    pairs = {(c, i): capacity_flags(str(c), str(i)) for c, i in machines}
    if not any(pairs.values()):
        return offers
    out = offers.copy()
    columns = (out[c].to_numpy(dtype=object) for c in ("flags", "cloud", "instance_type"))
    out["flags"] = [
        (*(f if isinstance(f, tuple | list) else ()), *pairs[(c, i)])
        for f, c, i in zip(*columns, strict=True)
    ]
    return out
