"""Prices you can pay: a market ranks only what its cloud sells in it, at the machine's standard
rate, and every serving answer dates the prices it ranks on."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_module
from perdollar.catalog.model import Offer
from perdollar.catalog.price_outliers import SPOT_BELOW_PEERS_FLAG, spot_below_peers
from perdollar.catalog.purchase import NONSTANDARD_SKU_FLAG, not_sold_reason, unranked_reasons
from perdollar.catalog.standard_prices import SKU_GAP, _below_the_gap, gcp_list_prices
from perdollar.price.network_serving import plausibly_priced

LIST_PRICES_US_CENTRAL1 = {
    name: usd for (name, region), usd in gcp_list_prices().items() if region == "us-central1"
}


@pytest.fixture(scope="module")
def offers() -> pd.DataFrame:
    return catalog_module.load().offers_frame()


def test_no_market_ranks_a_machine_its_cloud_does_not_sell_in_it(offers: pd.DataFrame) -> None:
    reasons = unranked_reasons(offers)
    small_a3 = offers["instance_type"].isin(["a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g"]).to_numpy()
    on_demand = (offers["market"] == "on-demand").to_numpy()
    assert small_a3.any()
    assert all("Spot or Flex-start" in r for r in reasons[small_a3 & on_demand])
    # Spot is how GCP sells them: only a price below the machine's standard group keeps one out.
    spot_reasons = set(reasons[small_a3 & ~on_demand])
    assert spot_reasons <= {"", *(r for r in spot_reasons if "standard rate" in r)}
    assert "" in spot_reasons
    assert not_sold_reason("gcp", "a3-highgpu-8g", "on-demand") == ""
    assert not_sold_reason("gcp", "a3-ultragpu-8g", "committed-1y")


def test_the_lower_of_two_sku_price_groups_is_not_a_standard_rate() -> None:
    assert _below_the_gap([43.07, 45.2, 87.8, 98.9, 111.8]) == 45.2
    # Regions of one standard rate differ by less than the gap: one group, nothing marked.
    assert _below_the_gap([0.70, 0.74, 0.78, 0.80, 0.87, 0.91]) is None
    assert _below_the_gap([1.0, SKU_GAP * 0.99]) is None
    assert _below_the_gap([5.0]) is None


def test_gcp_prices_agree_with_the_published_list_or_are_not_ranked(offers: pd.DataFrame) -> None:
    rows = offers[
        (offers["cloud"] == "gcp")
        & (offers["region"] == "us-central1")
        & (offers["market"] == "on-demand")
        & offers["instance_type"].isin(list(LIST_PRICES_US_CENTRAL1))
    ]
    assert set(rows["instance_type"]) == set(LIST_PRICES_US_CENTRAL1)
    rankable = rows[unranked_reasons(rows) == ""]
    for name, price in zip(rankable["instance_type"], rankable["price_per_hour"], strict=True):
        assert price == pytest.approx(LIST_PRICES_US_CENTRAL1[name], rel=0.03), name
    assert len(rankable) >= 8  # the check compares most of them, not none


def test_the_standard_rate_survives_in_the_regions_that_carry_it(offers: pd.DataFrame) -> None:
    a3 = offers[(offers["instance_type"] == "a3-highgpu-8g") & (offers["market"] == "on-demand")]
    marked = a3["flags"].map(lambda flags: NONSTANDARD_SKU_FLAG in flags).to_numpy(dtype=bool)
    assert marked.any() and (~marked).any()
    assert a3.loc[~marked, "price_per_hour"].min() > 80 > a3.loc[marked, "price_per_hour"].max()


def _serving_answer(*extra: str) -> dict:
    result = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--json", "--no-store",
        *extra,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_an_on_demand_serving_answer_ranks_only_what_is_sold_so_and_dates_it(offers: pd.DataFrame) -> None:
    answer = _serving_answer("--market", "on-demand", "--cloud", "gcp")
    deployments = answer["deployments"]
    assert deployments
    for row in deployments:
        assert not not_sold_reason(row["cloud"], row["instance_type"], row["market"]), row["label"]
        same = offers[
            (offers["cloud"] == row["cloud"])
            & (offers["instance_type"] == row["instance_type"])
            & (offers["region"] == row["region"])
            & (offers["market"] == row["market"])
        ]
        assert row["price_captured_at"] == str(same["captured_at"].iloc[0])[:10]
        assert isinstance(row["price_age_days"], int) and row["price_age_days"] >= 0
        assert not any(NONSTANDARD_SKU_FLAG in flags for flags in same["flags"])
    left_out = [n for n in answer["notes"] if n.startswith("not ranked:")]
    assert any("a3-highgpu-1g on-demand" in n for n in left_out)
    assert "Its price was captured" in answer["explanation"]


def test_a_spot_question_still_ranks_what_is_sold_as_spot() -> None:
    answer = _serving_answer("--market", "spot", "--cloud", "gcp", "--top", "50")
    assert answer["deployments"]
    assert {row["market"] for row in answer["deployments"]} == {"spot"}
    assert any(row["instance_type"] == "a3-highgpu-1g" for row in answer["deployments"])
    assert not any("Spot or Flex-start" in n for n in answer["notes"])


def test_the_serving_table_shows_each_price_date(tmp_path: Path) -> None:
    result = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--no-store",
        "--market", "on-demand", "--cloud", "aws",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    dates = {str(d)[:10] for d in catalog_module.load().offers_frame().query("cloud == 'aws'")["captured_at"]}
    assert any(date in result.stdout for date in dates)
    assert "price of" in result.stdout


def test_a_training_answer_on_demand_leaves_out_what_gcp_sells_only_as_spot() -> None:
    result = run_perdollar(
        "recommend", "vit-b16", "--samples", "1e8", "--market", "on-demand", "--cloud", "gcp", "--json",
        "--no-store", "--top", "50",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    rows = answer.get("candidates") or answer.get("ranked") or answer.get("estimates") or []
    assert rows
    names = np.array([row["instance_type"] for row in rows])
    assert not np.isin(names, ["a3-highgpu-1g", "a3-highgpu-2g", "a3-highgpu-4g", "a4-highgpu-8g"]).any()
    assert any(n.startswith("not ranked:") for n in answer["notes"])


def _spot(region: str, price: float) -> Offer:
    return Offer("aws", "p5.48xlarge", region, "spot", price, dt.date(2025, 11, 30))


def test_a_spot_price_far_below_its_regions_is_marked_and_ranked_after_the_rest() -> None:
    offers = [_spot("us-east-1", 16.0), _spot("us-west-2", 15.0), _spot("eu-west-1", 17.0),
              _spot("eu-north-1", 7.3), _spot("ap-south-1", 16.5)]  # fmt: skip
    assert spot_below_peers(offers) == {3}
    # Fewer regions than a group needs say nothing about the market's usual price.
    assert spot_below_peers(offers[2:]) == set()
    flagged = pd.DataFrame({"flags": [(), (SPOT_BELOW_PEERS_FLAG,), ("price-outlier",)]})
    assert plausibly_priced(flagged).tolist() == [True, False, False]


def test_the_bundled_tpu_v6e_spot_capture_in_us_central1_is_marked(offers: pd.DataFrame) -> None:
    tpu = offers[offers["instance_type"] == "tpu-v6e-8"]
    row = tpu[(tpu["region"] == "us-central1") & (tpu["market"] == "spot")]
    assert SPOT_BELOW_PEERS_FLAG in row["flags"].iloc[0]
    spot = offers[(offers["market"] == "spot") & (offers["price_per_hour"] > 0)]
    share = spot["flags"].map(lambda flags: SPOT_BELOW_PEERS_FLAG in flags).mean()
    assert 0 < share < 0.1  # the exception, not the market


def test_a_training_answer_names_the_dates_of_the_prices_it_ranks_on(offers: pd.DataFrame) -> None:
    result = run_perdollar("recommend", "vit-b16", "--samples", "1e8", "--cloud", "aws", "--no-store")
    assert result.returncode == 0, result.stderr
    aws_dates = sorted({str(d)[:10] for d in offers[offers["cloud"] == "aws"]["captured_at"]})
    footer = next(line for line in result.stdout.splitlines() if "ranked on prices captured" in line)
    assert any(date in footer for date in aws_dates)
    assert "catalog captured" not in footer  # the snapshot's own date says nothing of its AWS prices


def test_a_fleet_answer_dates_the_prices_of_its_machines(tmp_path: Path, offers: pd.DataFrame) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n0,2\n8,20\n20,5\n")
    result = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--load-curve", str(curve), "--ttft-p99-ms", "800",
        "--tpot-p99-ms", "50", "--cloud", "aws", "--json", "--no-store",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    aws_dates = {str(d)[:10] for d in offers[offers["cloud"] == "aws"]["captured_at"]}
    for key in ("fleet", "autoscaled_single_type", "static_peak"):
        dates = answer[key]["price_captured_at"]
        assert len(dates) == len(answer[key]["parts"]) and set(dates) <= aws_dates, key
