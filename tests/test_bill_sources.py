"""`perdollar catalog sources`: every egress, storage, energy and carbon row with its source and date."""

from __future__ import annotations

import csv
import datetime as dt
import json

import pytest

from cli_runner import run_perdollar
from perdollar.catalog.bill_data import DATA_RATES, ENERGY_FACTORS, GRID_CARBON
from perdollar.catalog.bill_sources import YEARLY_STALE_AFTER_DAYS, bill_sources


def _count(path: object) -> int:
    with open(str(path), newline="") as handle:
        return sum(1 for _ in csv.DictReader(handle))


def _sources(*extra: str) -> list[dict]:
    done = run_perdollar("catalog", "sources", "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["sources"]


def test_every_bill_row_is_listed_with_its_source_and_date(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_STALE_PRICE_DAYS", "100000")
    rows = _sources()
    tables = ("data_rates.csv", "energy_factors.csv", "grid_carbon.csv")
    by_table = {name: [r for r in rows if r["table"] == name] for name in tables}
    assert len(by_table["data_rates.csv"]) == _count(DATA_RATES)
    assert len(by_table["energy_factors.csv"]) == _count(ENERGY_FACTORS)
    assert len(by_table["grid_carbon.csv"]) == _count(GRID_CARBON)
    assert all(r["source"].strip() and r["as_of"].strip() for r in rows)
    assert not any(r["stale"] for r in by_table["data_rates.csv"])
    assert _sources("--stale") == [r for r in rows if r["stale"]]


def test_rates_go_stale_as_prices_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_STALE_PRICE_DAYS", "0")
    stale = _sources("--stale")
    assert {r["table"] for r in stale} >= {"data_rates.csv"}
    assert len([r for r in stale if r["table"] == "data_rates.csv"]) == _count(DATA_RATES)


def test_yearly_figures_go_stale_after_their_own_span() -> None:
    rows = [r for r in bill_sources(dt.date(2024, 12, 31)) if r.table == "grid_carbon.csv"]
    years = {int(r.as_of) for r in rows}
    later = dt.date(max(years), 12, 31) + dt.timedelta(days=YEARLY_STALE_AFTER_DAYS + 1)
    assert not any(r.stale for r in bill_sources(dt.date(max(years), 12, 31)) if r.table == "grid_carbon.csv")
    assert all(r.stale for r in bill_sources(later) if r.table == "grid_carbon.csv")
