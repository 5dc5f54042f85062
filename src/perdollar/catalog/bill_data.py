"""The bill's lines beyond instance-hours, as bundled data: egress and storage rates per cloud
(``data_rates.csv``), power and PUE factors (``energy_factors.csv``) and grid carbon intensity per
region (``grid_carbon.csv``). Every row names its source and date, so each figure can be shown
with where it came from and marked stale as prices are.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perdollar.errors import PerdollarError

_HERE = Path(__file__).parent
DATA_RATES = _HERE / "data_rates.csv"
ENERGY_FACTORS = _HERE / "energy_factors.csv"
GRID_CARBON = _HERE / "grid_carbon.csv"


@dataclass(frozen=True, slots=True)
class CloudDataRates:
    """One cloud's data-movement and storage prices (USD per decimal GB, as clouds bill)."""

    cloud: str
    inter_region_usd_per_gb: float
    inter_continent_usd_per_gb: float
    # (from GB, USD/GB) in increasing order: each rate applies to the GB above its threshold.
    internet_tiers: tuple[tuple[float, float], ...]
    storage_usd_per_gb_month: float
    copy_gbps: float
    as_of: str


@dataclass(frozen=True, slots=True)
class EnergyFactors:
    """The power model's constants (see ``energy_factors.csv`` for each one's source)."""

    pue: dict[str, float]
    accelerator_idle_fraction: float
    host_idle_w_per_vcpu: float
    host_busy_w_per_vcpu: float
    host_utilisation: float
    as_of: str


@dataclass(frozen=True, slots=True)
class GridIntensity:
    cloud: str
    region: str
    gco2e_per_kwh: float
    source: str
    year: int


def _rows(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False)


@functools.cache
def data_rates() -> dict[str, CloudDataRates]:
    """Per cloud, its egress tiers, storage and staged-copy throughput."""
    frame = _rows(DATA_RATES)
    out: dict[str, CloudDataRates] = {}
    for cloud, rows in frame.groupby("cloud", sort=False):
        by_item = {item: group.sort_values("tier_from_gb") for item, group in rows.groupby("item")}

        def first(item: str, group: dict[str, pd.DataFrame] = by_item) -> float:
            return float(group[item]["value"].iloc[0])

        internet = by_item["internet"]
        out[str(cloud)] = CloudDataRates(
            cloud=str(cloud),
            inter_region_usd_per_gb=first("inter_region"),
            inter_continent_usd_per_gb=first("inter_continent"),
            internet_tiers=tuple(
                (float(a), float(b)) for a, b in zip(internet["tier_from_gb"], internet["value"], strict=True)
            ),
            storage_usd_per_gb_month=first("object_storage"),
            copy_gbps=first("copy_throughput"),
            as_of=str(rows["as_of"].min()),
        )
    return out


@functools.cache
def energy_factors() -> EnergyFactors:
    frame = _rows(ENERGY_FACTORS)
    pue = {str(r.cloud): float(r.value) for r in frame.itertuples() if r.item == "pue"}
    shared = {str(r.item): float(r.value) for r in frame.itertuples() if r.cloud == "any"}
    return EnergyFactors(
        pue=pue,
        accelerator_idle_fraction=shared["accelerator_idle_fraction"],
        host_idle_w_per_vcpu=shared["host_idle_w_per_vcpu"],
        host_busy_w_per_vcpu=shared["host_busy_w_per_vcpu"],
        host_utilisation=shared["host_utilisation"],
        as_of=str(frame["as_of"].min()),
    )


@functools.cache
def grid_carbon() -> dict[tuple[str, str], GridIntensity]:
    """(cloud, region) → the grid's carbon intensity there, with its source and year."""
    frame = _rows(GRID_CARBON)
    return {
        (str(r.cloud), str(r.region)): GridIntensity(
            str(r.cloud), str(r.region), float(r.gco2e_per_kwh), str(r.source), int(r.year)
        )
        for r in frame.itertuples()
    }


# Region-name prefixes (AWS, GCP) and words (Azure) → continent, for inter-region rates.
_PREFIX_CONTINENT = (
    ("us-", "north-america"), ("ca-", "north-america"), ("northamerica-", "north-america"),
    ("mx-", "north-america"), ("sa-", "south-america"), ("southamerica-", "south-america"),
    ("eu-", "europe"), ("europe-", "europe"), ("me-", "middle-east"), ("il-", "middle-east"),
    ("af-", "africa"), ("africa-", "africa"), ("ap-", "asia-pacific"), ("asia-", "asia-pacific"),
    ("australia-", "asia-pacific"),
)  # fmt: skip
_AZURE_WORDS = (
    ("us", "north-america"), ("canada", "north-america"), ("mexico", "north-america"),
    ("brazil", "south-america"), ("chile", "south-america"),
    ("europe", "europe"), ("uk", "europe"), ("france", "europe"), ("germany", "europe"),
    ("norway", "europe"), ("sweden", "europe"), ("switzerland", "europe"), ("poland", "europe"),
    ("italy", "europe"), ("spain", "europe"), ("austria", "europe"), ("belgium", "europe"),
    ("denmark", "europe"), ("uae", "middle-east"), ("qatar", "middle-east"), ("israel", "middle-east"),
    ("southafrica", "africa"),
)  # fmt: skip


def continent_of(region: str) -> str:
    """The continent a region's name places it on ('asia-pacific' for the rest of Asia and Oceania)."""
    name = region.lower()
    for prefix, continent in _PREFIX_CONTINENT:
        if name.startswith(prefix):
            return continent
    for word, continent in _AZURE_WORDS:
        if re.search(rf"(^|[a-z]){word}(\d|[a-z]*$)", name) and (
            word != "us" or name.endswith(("us", "us2", "us3"))
        ):
            return continent
    return "asia-pacific"


def cloud_of_region(region: str, regions_by_cloud: dict[str, set[str]]) -> str:
    """The cloud whose catalog lists ``region``; a one-line error when none or several do."""
    owners = sorted(cloud for cloud, regions in regions_by_cloud.items() if region in regions)
    if len(owners) == 1:
        return owners[0]
    if not owners:
        raise PerdollarError(
            f"--data-region {region!r} is not a region of any cloud in the catalog",
            "give a region as the catalog names it, e.g. us-east-1 (aws), us-central1 (gcp), eastus (azure)",
        )
    raise PerdollarError(
        f"--data-region {region!r} names a region of {' and '.join(owners)}",
        "prefix the cloud, e.g. --data-region aws:us-east-1",
    )


def bill_data_dates() -> dict[str, str]:
    """Capture date and origin of each bundled bill table, for the provenance listing."""
    rates = data_rates()
    carbon = grid_carbon()
    years = sorted({g.year for g in carbon.values()})
    return {
        "data_transfer_and_storage": ", ".join(f"{c} {r.as_of}" for c, r in rates.items())
        + " (each cloud's published egress and object-storage list prices; per-row source in data_rates.csv)",
        "energy_factors": energy_factors().as_of
        + " (Cloud Carbon Footprint methodology constants; per-row source in energy_factors.csv)",
        "grid_carbon": "/".join(str(y) for y in years)
        + f" ({len(carbon)} regions; Google Cloud region carbon data and Cloud Carbon Footprint emissions "
        "factors; per-row source in grid_carbon.csv)",
    }
