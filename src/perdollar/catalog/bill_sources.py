"""Where every figure of the bill beyond instance-hours comes from: each row of the egress and
storage rates, the energy factors and the grid carbon intensities, with its source, its date and
whether it is stale.

Rates are prices and go stale as prices do (``PERDOLLAR_STALE_PRICE_DAYS``, default 30 days).
Energy factors and grid intensities are yearly figures published a year or more after the year
they describe, so they count as stale past :data:`YEARLY_STALE_AFTER_DAYS`; a grid row's date is
the last day of its year.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from perdollar.catalog.bill_data import DATA_RATES, ENERGY_FACTORS, GRID_CARBON
from perdollar.catalog.price_age import is_stale

YEARLY_STALE_AFTER_DAYS = 3 * 365


@dataclass(frozen=True, slots=True)
class BillSource:
    table: str  # the bundled file the row is in
    cloud: str
    item: str  # what the figure is: inter_region, pue, us-east-1 grid …
    value: float
    unit: str
    source: str
    as_of: str
    stale: bool


def _rows(path: Path) -> list[dict[str, object]]:
    return pd.read_csv(path, keep_default_na=False).to_dict("records")


def _source(path: Path, row: dict[str, object], item: str, value: object, unit: str, as_of: str,
            stale: bool) -> BillSource:  # fmt: skip
    cloud, source = str(row["cloud"]), str(row["source"])
    return BillSource(path.name, cloud, item, float(str(value)), unit, source, as_of, stale)


def _rates(today: dt.date) -> list[BillSource]:
    out = []
    for row in _rows(DATA_RATES):
        tier = float(str(row["tier_from_gb"]))
        item = str(row["item"]) + (f" from {tier:g} GB" if tier else "")
        as_of = str(row["as_of"])
        stale = is_stale(as_of, today)
        out.append(_source(DATA_RATES, row, item, row["value"], str(row["unit"]), as_of, stale))
    return out


def _factors(today: dt.date) -> list[BillSource]:
    out = []
    for row in _rows(ENERGY_FACTORS):
        as_of = str(row["as_of"])
        stale = is_stale(as_of, today, YEARLY_STALE_AFTER_DAYS)
        item, unit = str(row["item"]), str(row["unit"])
        out.append(_source(ENERGY_FACTORS, row, item, row["value"], unit, as_of, stale))
    return out


def _grid(today: dt.date) -> list[BillSource]:
    out = []
    for row in _rows(GRID_CARBON):
        year = str(row["year"])
        stale = is_stale(f"{year}-12-31", today, YEARLY_STALE_AFTER_DAYS)
        item = f"{row['region']} grid"
        out.append(_source(GRID_CARBON, row, item, row["gco2e_per_kwh"], "gCO2e/kWh", year, stale))
    return out


def bill_sources(today: dt.date | None = None) -> list[BillSource]:
    """Every row of the three bill tables, in file order, marked stale as of ``today``."""
    day = today or dt.date.today()
    return [*_rates(day), *_factors(day), *_grid(day)]
