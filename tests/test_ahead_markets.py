"""Capacity bought ahead: each way an offer is bought is a market of its own, ranked at the cloud's
published price; a capacity block bills the whole days it is booked; what a market sells without
a bundled price is named as left out."""

from __future__ import annotations

import datetime as dt
import json
import math
import re

import numpy as np
import pytest

from cli_runner import run_perdollar
from perdollar.catalog.markets import bundled_prices, bundled_sales, capacity_block_days
from perdollar.catalog.purchase import not_sold_reason

PUBLISHED = {(p.cloud, p.instance_type, p.region, p.market): p.price_per_hour for p in bundled_prices()}


def _answer(*args: str) -> dict:
    result = run_perdollar(
        "recommend", "llama-3.1-8b", "--tokens", "2e10", "--json", "--no-store", "--top", "50", *args
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def capacity_blocks() -> dict:
    return _answer("--market", "capacity-block", "--cloud", "aws")


def test_a_capacity_block_question_ranks_aws_blocks_at_their_published_prices(capacity_blocks: dict) -> None:
    rows = capacity_blocks["estimates"]
    assert {r["market"] for r in rows} == {"capacity-block"}
    for r in rows:
        published = PUBLISHED[("aws", r["instance_type"], r["region"], "capacity-block")]
        assert r["price_per_hour"] == pytest.approx(published * r["nodes"]), r["label"]
    machines = {r["instance_type"] for r in rows}
    assert {"p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge"} <= machines


def test_a_capacity_block_job_pays_its_whole_days(capacity_blocks: dict) -> None:
    rounded = 0
    for r in capacity_blocks["estimates"]:
        hours = r["expected_time_hours"]
        days = math.ceil(hours / 24) if hours <= 14 * 24 else 7 * math.ceil(hours / (7 * 24))
        assert r["expected_cost_usd"] == pytest.approx(days * 24 * r["price_per_hour"], rel=1e-9), r["label"]
        rounded += days * 24 - hours > 1
    assert rounded  # the rounding shows in the bills, not only in whole-day jobs
    notes = "\n".join(capacity_blocks["notes"])
    assert "whole blocks" in notes and "days rounded up" in notes
    # The machines AWS books in blocks where no price is bundled are named, with the reason.
    assert re.search(
        r"not ranked: \d+ offer\(s\) \(aws p\S+ capacity-block.*no published price for capacity-block", notes
    )


def test_a_flex_start_question_ranks_a3_machines_at_their_flex_start_prices() -> None:
    answer = _answer("--market", "flex-start", "--cloud", "gcp")
    rows = answer["estimates"]
    assert rows and {r["market"] for r in rows} == {"flex-start"}
    assert {r["instance_type"] for r in rows} <= {f"a3-highgpu-{n}g" for n in (1, 2, 4, 8)}
    for r in rows:
        published = PUBLISHED[("gcp", r["instance_type"], r["region"], "flex-start")]
        assert r["price_per_hour"] == pytest.approx(published * r["nodes"]), r["label"]
        # Flex-start bills the hours used: no rounding to days.
        assert r["expected_cost_usd"] == pytest.approx(r["expected_time_hours"] * r["price_per_hour"])
    notes = "\n".join(answer["notes"])
    assert "no published price for flex-start" in notes and "gcp a2-highgpu-1g flex-start" in notes


def test_on_demand_beside_a_block_still_ranks_only_what_is_sold_on_demand() -> None:
    rows = _answer("--market", "on-demand,capacity-block", "--cloud", "aws", "--objective", "time")[
        "estimates"
    ]
    assert {r["market"] for r in rows} == {"on-demand", "capacity-block"}
    for r in rows:
        assert not not_sold_reason(r["cloud"], r["instance_type"], r["market"]), r["label"]
    gcp = _answer("--market", "on-demand,flex-start", "--cloud", "gcp")["estimates"]
    small_a3 = {f"a3-highgpu-{n}g" for n in (1, 2, 4)}
    assert all(r["market"] == "flex-start" for r in gcp if r["instance_type"] in small_a3)
    assert any(r["market"] == "on-demand" for r in gcp)


def test_a_market_that_is_not_one_is_refused_naming_every_market() -> None:
    result = run_perdollar("recommend", "llama-3.1-8b", "--tokens", "2e10", "--market", "capacity-blocks")
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line and "Traceback" not in result.stderr
    for market in ("on-demand", "spot", "flex-start", "capacity-block", "reservation", "committed-1y"):
        assert market in line


def test_a_market_without_a_bundled_price_says_so_in_one_line() -> None:
    result = run_perdollar("recommend", "llama-3.1-8b", "--tokens", "2e10", "--market", "reservation")
    assert result.returncode == 3
    line = result.stderr.strip()
    assert "\n" not in line and "no published price for reservation" in line and "a4-highgpu-8g" in line


def test_capacity_blocks_are_whole_days_then_whole_weeks_up_to_182_days() -> None:
    hours = np.array([0.5, 24.0, 24.01, 14 * 24.0, 14 * 24 + 1, 181 * 24.0, 182 * 24.0, 183 * 24.0, np.nan])
    days = capacity_block_days(hours)
    assert days[:8].tolist() == [1, 1, 2, 14, 21, 182, 182, 183]
    assert np.isnan(days[8])


def test_every_bundled_market_price_is_dated_and_sourced() -> None:
    sold = {(s.cloud, s.market) for s in bundled_sales()}
    for price in bundled_prices():
        assert price.source.startswith("https://") and price.as_of <= dt.date.today()
        assert (price.cloud, price.market) in sold
        if price.market == "flex-start":
            # The price is the sum of its published SKUs' rates, each spelled out in the note.
            parts = re.findall(r"(\d+) (?:x )?[^$+]*\$([\d.]+)/h", price.note)
            assert len(parts) == 4, price.note
            assert price.price_per_hour == pytest.approx(sum(int(n) * float(r) for n, r in parts), abs=1e-5)
