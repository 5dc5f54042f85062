"""Committed-use terms (AWS Savings Plans and reserved instances, GCP committed use discounts, Azure
reservations) as markets of their own, derived from the on-demand offers.

A term is a published discount off on-demand for an instance pattern, dated and sourced in the
bundled ``committed_terms.csv``; the first row whose cloud and pattern match an instance gives its
discount for that term length. A committed offer's price is the on-demand price × (1 − discount):
the hourly rate billed for *every* hour of the term, used or not (what that means for a question's
horizon is the price stage's business).
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
import gzip
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.errors import PerdollarError

TERMS_FILE = Path(__file__).with_name("committed_terms.csv")
RATES_FILE = Path(__file__).with_name("committed_rates.csv.gz")
TERMS_COLUMNS = (
    "cloud", "instance_pattern", "term_years", "payment", "discount_vs_on_demand", "confidence", "source",
    "as_of", "note",
)  # fmt: skip
# Set on every committed offer: its price is derived, not captured as a market price.
COMMITTED_FLAG = "committed-term-from-published-discount"
COMMITTED_FLAG_MEANING = (
    "Committed-use price: the cloud's published rate for the machine where bundled (AWS reserved, "
    "committed_rates.csv.gz), else on-demand × (1 − the published discount of the term, "
    "committed_terms.csv); billed for every hour of the term whether used or not."
)


@dataclass(frozen=True, slots=True)
class CommittedTerm:
    """One published discount: ``cloud`` instances matching ``instance_pattern`` for ``term_years``."""

    cloud: str
    instance_pattern: str
    term_years: int
    payment: str
    discount_vs_on_demand: float
    confidence: str
    source: str
    as_of: dt.date
    note: str = ""

    @property
    def market(self) -> str:
        return f"committed-{self.term_years}y"

    @property
    def term_hours(self) -> float:
        return self.term_years * HOURS_PER_YEAR

    def matches(self, cloud: str, instance_type: str) -> bool:
        return cloud.lower() == self.cloud and fnmatch.fnmatch(instance_type.lower(), self.instance_pattern)


HOURS_PER_YEAR = 8760.0


def _term(path: Path, number: int, row: dict[str, str]) -> CommittedTerm:
    try:
        discount = float(row["discount_vs_on_demand"])
        years = int(row["term_years"])
        as_of = dt.date.fromisoformat(row["as_of"])
    except (KeyError, ValueError) as error:
        raise PerdollarError(
            f"{path}: row {number} is not a committed term ({error})",
            f"give {', '.join(TERMS_COLUMNS)} with a discount like 0.37 and a date like 2025-06-01",
        ) from None
    if not 0.0 <= discount < 1.0 or years not in (1, 3):
        raise PerdollarError(
            f"{path}: row {number} has discount {discount} for {years} years",
            "a discount is a share of on-demand below 1 (0.37) for a 1- or 3-year term",
        )
    return CommittedTerm(
        cloud=row["cloud"].strip().lower(), instance_pattern=row["instance_pattern"].strip().lower(),
        term_years=years, payment=row["payment"], discount_vs_on_demand=discount,
        confidence=row["confidence"], source=row["source"], as_of=as_of, note=row.get("note", ""),
    )  # fmt: skip


def read_terms(path: Path) -> tuple[CommittedTerm, ...]:
    """The terms of a CSV file, in file order (more specific patterns first)."""
    try:
        with path.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    except FileNotFoundError:
        raise PerdollarError(f"committed terms file {path} is missing", "reinstall perdollar") from None
    return tuple(_term(path, number, row) for number, row in enumerate(rows, start=2))


@cache
def bundled_terms() -> tuple[CommittedTerm, ...]:
    return read_terms(TERMS_FILE)


def term_for(
    cloud: str, instance_type: str, years: int, terms: tuple[CommittedTerm, ...]
) -> CommittedTerm | None:
    """The first term of ``years`` whose pattern matches, or None where the cloud publishes none."""
    return next((t for t in terms if t.term_years == years and t.matches(cloud, instance_type)), None)


@dataclass(frozen=True, slots=True)
class PublishedRate:
    """A cloud's own committed rate for one instance type, region and term (USD per hour)."""

    cloud: str
    instance_type: str
    region: str
    term_years: int
    payment: str
    price_per_hour: float
    source: str
    as_of: dt.date


RatesByKey = dict[tuple[str, str, str, int], PublishedRate]


@cache
def bundled_rates() -> RatesByKey:
    """The per-instance rates built by :mod:`perdollar.catalog.committed_build`."""
    with gzip.open(RATES_FILE, "rt", newline="") as handle:
        rates = [
            PublishedRate(
                row["cloud"],
                row["instance_type"],
                row["region"],
                int(row["term_years"]),
                row["payment"],
                float(row["price_per_hour"]),
                row["source"],
                dt.date.fromisoformat(row["as_of"]),
            )
            for row in csv.DictReader(handle)
        ]
    return {(r.cloud, r.instance_type, r.region, r.term_years): r for r in rates}


@dataclass(frozen=True, slots=True)
class _Priced:
    price: float
    basis: str
    source: str
    as_of: dt.date


def _term_price(
    row: tuple[str, str, str, float], years: int, terms: tuple[CommittedTerm, ...], rates: RatesByKey
) -> _Priced | None:
    """The cloud's own rate for the machine where published, else its pattern's discount."""
    cloud, name, region, on_demand = row
    rate = rates.get((cloud, name, region, years))
    if rate is not None:
        saved = 1 - rate.price_per_hour / on_demand
        basis = f"published {years}-year {rate.payment} rate ({saved:.0%} below on-demand)"
        return _Priced(rate.price_per_hour, basis, f"{rate.source} ({rate.as_of})", rate.as_of)
    term = term_for(cloud, name, years, terms)
    if term is None:
        return None
    basis = f"on-demand × (1 − {term.discount_vs_on_demand:.0%}): {term.note}"
    source = f"{term.source} ({term.as_of}, {term.payment}, −{term.discount_vs_on_demand:.0%})"
    return _Priced(on_demand * (1.0 - term.discount_vs_on_demand), basis, source, term.as_of)


def committed_offers(
    offers: pd.DataFrame, terms: tuple[CommittedTerm, ...] | None = None, rates: RatesByKey | None = None
) -> pd.DataFrame:
    """One committed offer per on-demand offer and term its cloud publishes a rate or discount for.

    ``offers`` is :meth:`Catalog.offers_frame`. A machine's own published rate (``rates``, per
    instance type, region and term) wins over its pattern's discount (``terms``). The result has
    the offers' columns plus ``on_demand_price_per_hour``, ``term_years`` and ``term_source``; a
    committed price dates from the older of the on-demand price and the rate, so it turns stale
    with either.
    """
    terms = bundled_terms() if terms is None else terms
    rates = bundled_rates() if rates is None else rates
    on_demand = offers[(offers["market"] == "on-demand") & (offers["price_per_hour"] > 0)]
    keys = list(
        zip(on_demand["cloud"].astype(str), on_demand["instance_type"].astype(str),
            on_demand["region"].astype(str), on_demand["price_per_hour"].astype(float), strict=True)
    )  # fmt: skip
    parts = []
    for years in sorted({t.term_years for t in terms} | {k[3] for k in rates}):
        found = [_term_price(key, years, terms, rates) for key in keys]
        keep = np.array([p is not None for p in found], dtype=bool)
        if not keep.any():
            continue
        chosen = [p for p in found if p is not None]
        rows = on_demand.loc[keep].copy()
        rows["on_demand_price_per_hour"] = rows["price_per_hour"].to_numpy(dtype=float)
        rows["price_per_hour"] = [p.price for p in chosen]
        rows["market"] = f"committed-{years}y"
        rows["term_years"] = years
        rows["term_source"] = [p.source for p in chosen]
        rows["price_basis"] = [p.basis for p in chosen]
        rows["captured_at"] = [
            min(_as_date(c), p.as_of) for c, p in zip(rows["captured_at"], chosen, strict=True)
        ]
        rows["flags"] = [_with_flag(f) for f in rows["flags"]]
        rows["price_max_per_hour"] = np.nan
        rows["price_min_per_hour"] = np.nan
        rows["interruption_bucket"] = None
        parts.append(rows)
    if not parts:
        return offers.iloc[0:0].assign(on_demand_price_per_hour=[], term_years=[], term_source=[])
    return pd.concat(parts, ignore_index=True)


def _as_date(value: object) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def _with_flag(flags: object) -> tuple[str, ...]:
    existing = tuple(flags) if isinstance(flags, tuple | list) else ()
    return (*existing, COMMITTED_FLAG)


def with_committed(offers: pd.DataFrame, terms: tuple[CommittedTerm, ...] | None = None) -> pd.DataFrame:
    """``offers`` and the committed offers derived from them, one frame."""
    committed = committed_offers(offers, terms)
    if committed.empty:
        return offers
    return pd.concat([offers, committed], ignore_index=True)
