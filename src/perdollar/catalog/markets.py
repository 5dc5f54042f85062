"""Markets that sell capacity ahead of the run, at the clouds' own published prices.

GCP Flex-start VMs (Dynamic Workload Scheduler) queue for capacity and then run up to seven days
at their own SKUs' rates; AWS EC2 Capacity Blocks for ML are booked for a start date and a whole
number of days at a published hourly rate; some machines are sold only through reservations. A
catalog snapshot holds none of these prices, so they are bundled, each row with its page and date:

- ``market_prices.csv``: one published price per machine, region and market;
- ``market_sales.csv``: which machines each market sells (its page and date), so a machine it
  sells but whose price is not bundled is named as left out rather than silently missing.

A capacity block bills every hour it is booked: :func:`capacity_block_days` is the whole number of
days a job of some hours must book.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.errors import PerdollarError
from perdollar.vocabulary import AHEAD_MARKETS

PRICES_FILE = Path(__file__).with_name("market_prices.csv")
SALES_FILE = Path(__file__).with_name("market_sales.csv")
PRICE_COLUMNS = ("cloud", "instance_type", "region", "market", "price_per_hour", "source", "as_of", "note")

# EC2 Capacity Blocks for ML: 1 to 14 days by the day, then whole weeks up to 182 days
# (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-how.html).
BLOCK_DAILY_UP_TO_DAYS = 14
BLOCK_WEEK_DAYS = 7
BLOCK_LONGEST_DAYS = 182
HOURS_PER_DAY = 24.0
# Flex-start VMs run for at most seven days, then Compute Engine deletes them.
FLEX_START_LONGEST_DAYS = 7


def no_price_reason(market: str) -> str:
    return f"no published price for {market}"


@dataclass(frozen=True, slots=True)
class MarketPrice:
    """A cloud's published hourly price for one machine in one region and market."""

    cloud: str
    instance_type: str
    region: str
    market: str
    price_per_hour: float
    source: str
    as_of: dt.date
    note: str = ""


@dataclass(frozen=True, slots=True)
class MarketSale:
    """A market's machines: those of ``cloud`` whose type matches ``instance_pattern``."""

    cloud: str
    instance_pattern: str
    market: str
    meaning: str
    source: str
    as_of: dt.date

    def sells(self, cloud: str, instance_type: str) -> bool:
        return cloud.lower() == self.cloud and fnmatch.fnmatch(instance_type.lower(), self.instance_pattern)


def _rows(path: Path) -> list[dict[str, str]]:
    try:
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))
    except FileNotFoundError:
        raise PerdollarError(f"market price file {path} is missing", "reinstall perdollar") from None


def _price(path: Path, number: int, row: dict[str, str]) -> MarketPrice:
    try:
        price = float(row["price_per_hour"])
        as_of = dt.date.fromisoformat(row["as_of"])
        market = row["market"]
    except (KeyError, ValueError) as error:
        raise PerdollarError(
            f"{path}: row {number} is not a market price ({error})",
            f"give {', '.join(PRICE_COLUMNS)} with a price like 41.528 and a date like 2026-07-22",
        ) from None
    if market not in AHEAD_MARKETS or not (price > 0 and math.isfinite(price)):
        raise PerdollarError(
            f"{path}: row {number} prices {market!r} at {price}",
            f"a market price is above zero, in one of {', '.join(AHEAD_MARKETS)}",
        )
    return MarketPrice(
        cloud=row["cloud"].strip().lower(), instance_type=row["instance_type"].strip(),
        region=row["region"].strip(), market=market, price_per_hour=price, source=row["source"],
        as_of=as_of, note=row.get("note", ""),
    )  # fmt: skip


def read_prices(path: Path) -> tuple[MarketPrice, ...]:
    return tuple(_price(path, number, row) for number, row in enumerate(_rows(path), start=2))


@cache
def bundled_prices() -> tuple[MarketPrice, ...]:
    return read_prices(PRICES_FILE)


@cache
def bundled_sales() -> tuple[MarketSale, ...]:
    return tuple(
        MarketSale(
            cloud=row["cloud"].strip().lower(),
            instance_pattern=row["instance_pattern"].strip().lower(),
            market=row["market"],
            meaning=row["meaning"],
            source=row["source"],
            as_of=dt.date.fromisoformat(row["as_of"]),
        )
        for row in _rows(SALES_FILE)
    )


def ahead_markets_named(market: str) -> tuple[str, ...]:
    """The ahead markets a ``--market`` value names (``capacity-block,spot`` → capacity-block)."""
    names = {m.strip() for m in market.split(",")}
    return tuple(m for m in AHEAD_MARKETS if m in names)


def _as_date(value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def market_offers(
    offers: pd.DataFrame,
    markets: tuple[str, ...],
    prices: tuple[MarketPrice, ...] | None = None,
    machines: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One offer per published price in ``markets`` whose machine the catalog lists in that region.

    ``offers`` is :meth:`Catalog.offers_frame`; each new row takes the machine's columns from one of
    its offers in the region and the price, its date and its source from the price row. A machine
    sold only ahead has no offer at all: its rows take the columns of ``machines``
    (:meth:`Catalog.instances_frame`) and the price's region.
    """
    prices = bundled_prices() if prices is None else prices
    chosen = [p for p in prices if p.market in markets]
    if not chosen or offers.empty:
        return offers.iloc[0:0]
    keys = ["cloud", "instance_type", "region"]
    regional = offers.drop_duplicates(keys).set_index(keys)
    if machines is not None:
        regional = pd.concat([regional, _ahead_only_rows(offers, chosen, machines)])
    found = [p for p in chosen if (p.cloud, p.instance_type, p.region) in regional.index]
    if not found:
        return offers.iloc[0:0]
    rows = regional.loc[[(p.cloud, p.instance_type, p.region) for p in found]].reset_index()
    captured = [_as_date(c) for c in rows["captured_at"]]
    rows["price_age_days"] = [
        float(age) + (day - p.as_of).days
        for age, day, p in zip(rows["price_age_days"].fillna(0.0), captured, found, strict=True)
    ]
    rows["market"] = [p.market for p in found]
    rows["price_per_hour"] = [p.price_per_hour for p in found]
    rows["price_min_per_hour"] = np.nan
    rows["price_max_per_hour"] = np.nan
    rows["price_basis"] = [f"published {p.market} price ({p.source}, {p.as_of})" for p in found]
    rows["captured_at"] = [p.as_of for p in found]
    rows["interruption_bucket"] = None
    rows["flags"] = [() for _ in found]
    return rows[list(offers.columns)]


def _ahead_only_rows(offers: pd.DataFrame, prices: list[MarketPrice], machines: pd.DataFrame) -> pd.DataFrame:
    """Offer-shaped rows, indexed by (cloud, instance_type, region), for the priced machines that
    ``offers`` never lists: the machine's columns, the price's region, dated as the price."""
    listed = set(zip(offers["cloud"], offers["instance_type"], strict=True))
    by_name = machines.drop_duplicates(["cloud", "instance_type"]).set_index(["cloud", "instance_type"])
    wanted = [
        p
        for p in prices
        if (p.cloud, p.instance_type) not in listed and (p.cloud, p.instance_type) in by_name.index
    ]
    if not wanted:
        return offers.iloc[0:0].set_index(["cloud", "instance_type", "region"])
    rows = by_name.loc[[(p.cloud, p.instance_type) for p in wanted]].reset_index()
    newest = max(_as_date(c) for c in offers["captured_at"])
    rows = rows.assign(
        region=[p.region for p in wanted], captured_at=[p.as_of for p in wanted],
        price_age_days=[float((newest - p.as_of).days) for p in wanted],
    )  # fmt: skip
    for column in offers.columns.difference(rows.columns):
        rows[column] = None
    return (
        rows[list(offers.columns)]
        .drop_duplicates(["cloud", "instance_type", "region"])
        .set_index(["cloud", "instance_type", "region"])
    )


def with_market_offers(
    offers: pd.DataFrame, markets: tuple[str, ...], machines: pd.DataFrame | None = None
) -> pd.DataFrame:
    """``offers`` and the published offers of the ahead ``markets``, one frame (``machines``: the
    catalog's instance types, for the machines sold only ahead)."""
    added = market_offers(offers, markets, machines=machines)
    return offers if added.empty else pd.concat([offers, added], ignore_index=True)


def unpriced_offers(offers: pd.DataFrame, market: str) -> pd.DataFrame:
    """The machines and regions of ``offers`` that ``market`` sells but has no published price
    for: one row each (its columns taken from the machine's offers), ``market`` set to it."""
    sales = [s for s in bundled_sales() if s.market == market]
    if not sales or offers.empty:
        return offers.iloc[0:0]
    keys = ["cloud", "instance_type", "region"]
    machines = offers[offers["market"] != market].drop_duplicates(keys)
    sold = np.fromiter(
        (any(s.sells(str(c), str(i)) for s in sales)
         for c, i in zip(machines["cloud"], machines["instance_type"], strict=True)),
        dtype=bool, count=len(machines),
    )  # fmt: skip
    priced = {(p.cloud, p.instance_type, p.region) for p in bundled_prices() if p.market == market}
    keys_of = zip(machines["cloud"], machines["instance_type"], machines["region"], strict=True)
    unpriced = np.fromiter((key not in priced for key in keys_of), dtype=bool, count=len(machines))
    return machines[sold & unpriced].assign(market=market)


def capacity_block_days(hours: np.ndarray) -> np.ndarray:
    """The days of capacity blocks a job of ``hours`` books: whole days up to 14, whole weeks up
    to 182, and as many 182-day blocks as a longer job needs (NaN where the hours are unknown)."""
    hours = np.asarray(hours, dtype=np.float64)
    days = np.ceil(np.where(np.isfinite(hours) & (hours > 0), hours, np.nan) / HOURS_PER_DAY)
    full = np.floor((days - 1) / BLOCK_LONGEST_DAYS)  # the 182-day blocks before the last one
    last = days - full * BLOCK_LONGEST_DAYS
    last = np.where(last > BLOCK_DAILY_UP_TO_DAYS, np.ceil(last / BLOCK_WEEK_DAYS) * BLOCK_WEEK_DAYS, last)
    return full * BLOCK_LONGEST_DAYS + np.minimum(last, BLOCK_LONGEST_DAYS)


def ahead_market_note(market: str) -> str:
    """How the market is bought and billed, for an answer that ranks it."""
    if market == "capacity-block":
        return (
            "capacity-block: EC2 Capacity Blocks for ML are booked ahead for a start date (up to 8 weeks "
            "out) and 1–14 days or whole weeks up to 182; each job is billed for the whole blocks its "
            "time needs (days rounded up), paid up front at the published rate (market_prices.csv)"
        )
    if market == "flex-start":
        return (
            "flex-start: GCP Flex-start VMs wait in a queue until capacity is free, then run at most "
            f"{FLEX_START_LONGEST_DAYS} days (a longer job resumes from a checkpoint in a new VM); "
            "billed per hour used at the published Flex-start SKU rates (market_prices.csv)"
        )
    return "reservation: capacity reserved ahead with the cloud; no reservation price is bundled"
