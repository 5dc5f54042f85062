"""Committed-use terms: derived offers, the horizon rule, break-even utilisation, and the ranking
choosing a term only where the horizon makes it cheapest."""

from __future__ import annotations

import datetime as dt
import json
import math

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.catalog.committed import (
    COMMITTED_FLAG,
    CommittedTerm,
    PublishedRate,
    bundled_rates,
    committed_offers,
    term_for,
)
from perdollar.catalog.filters import allowed_offers
from perdollar.price.committed import (
    bill_over_horizon,
    break_even_utilisation,
    effective_hourly,
    market_comparison,
)

AS_OF = dt.date(2025, 6, 1)
TERMS = (
    CommittedTerm(
        "aws", "p4d.*", 1, "no-upfront", 0.40, "medium", "https://example.test/ri", dt.date(2025, 6, 1)
    ),
    CommittedTerm(
        "aws", "*", 1, "no-upfront", 0.30, "medium", "https://example.test/sp", dt.date(2025, 6, 1)
    ),
    CommittedTerm(
        "aws", "*", 3, "no-upfront", 0.50, "medium", "https://example.test/sp", dt.date(2025, 6, 1)
    ),
)


def _offers() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "cloud": ["aws", "aws", "aws", "gcp"],
            "instance_type": ["g5.xlarge", "g5.xlarge", "p4d.24xlarge", "a2-highgpu-1g"],
            "region": ["us-east-1"] * 3 + ["us-central1"],
            "market": ["on-demand", "spot", "on-demand", "on-demand"],
            "price_per_hour": [1.0, 0.4, 20.0, 3.0],
            "price_max_per_hour": [math.nan] * 4,
            "price_basis": [""] * 4,
            "interruption_bucket": [None, "<5%", None, None],
            "captured_at": [dt.date(2025, 11, 30)] * 3 + [dt.date(2025, 1, 1)],
            "flags": [(), (), ("price-outlier",), ()],
        }
    )


def test_effective_hourly_pays_the_whole_term_over_a_shorter_horizon() -> None:
    # 6 months of a 1-year term: the 8760 h of the term spread over 6 × 730 = 4380 h → twice the rate.
    assert effective_hourly(0.7, 1, 6) == pytest.approx(0.7 * 8760 / 4380)
    assert effective_hourly(0.7, 1, 12) == pytest.approx(0.7)  # 12 × 730 = 8760 h: the term exactly
    assert effective_hourly(0.7, 1, 24) == pytest.approx(0.7)  # renewed: still its rate
    assert effective_hourly(0.5, 3, 12) == pytest.approx(0.5 * 3)  # 3 years paid over 1
    assert effective_hourly(0.5, 3, None) == 0.5  # no horizon: needed for the whole term


def test_break_even_is_the_effective_rate_over_the_alternative() -> None:
    assert break_even_utilisation(0.7, 1.0) == pytest.approx(0.7)
    assert break_even_utilisation(1.4, 1.0) == pytest.approx(1.4)  # above 1: never pays
    assert break_even_utilisation(0.7, 0.35) == pytest.approx(2.0)
    assert math.isnan(break_even_utilisation(0.7, 0.0))


def test_the_first_matching_pattern_gives_the_discount() -> None:
    assert term_for("aws", "p4d.24xlarge", 1, TERMS) is TERMS[0]
    assert term_for("aws", "g5.xlarge", 1, TERMS) is TERMS[1]
    assert term_for("gcp", "a2-highgpu-1g", 1, TERMS) is None  # no term published in this table


def test_committed_offers_are_on_demand_times_one_minus_the_discount() -> None:
    derived = committed_offers(_offers(), TERMS, {})
    by_key = {(r.instance_type, r.market): r for r in derived.itertuples(index=False)}
    assert set(by_key) == {("g5.xlarge", "committed-1y"), ("g5.xlarge", "committed-3y"),
                           ("p4d.24xlarge", "committed-1y"), ("p4d.24xlarge", "committed-3y")}  # fmt: skip
    assert by_key[("g5.xlarge", "committed-1y")].price_per_hour == pytest.approx(1.0 * (1 - 0.30))
    assert by_key[("p4d.24xlarge", "committed-1y")].price_per_hour == pytest.approx(20.0 * (1 - 0.40))
    assert by_key[("g5.xlarge", "committed-3y")].price_per_hour == pytest.approx(1.0 * (1 - 0.50))
    p4d = by_key[("p4d.24xlarge", "committed-1y")]
    # The on-demand row's flags stay, the committed flag joins them; the older date wins.
    assert p4d.flags == ("price-outlier", COMMITTED_FLAG)
    assert p4d.captured_at == dt.date(2025, 6, 1)
    assert p4d.on_demand_price_per_hour == 20.0


def test_a_machines_published_rate_wins_over_the_discount() -> None:
    rate = PublishedRate(
        "aws", "g5.xlarge", "us-east-1", 1, "no-upfront", 0.61, "https://example.test/ri", AS_OF
    )
    derived = committed_offers(_offers(), TERMS, {("aws", "g5.xlarge", "us-east-1", 1): rate})
    one_year = derived[derived["market"] == "committed-1y"].set_index("instance_type")
    assert one_year.loc["g5.xlarge", "price_per_hour"] == 0.61  # its own rate
    assert one_year.loc["p4d.24xlarge", "price_per_hour"] == pytest.approx(20.0 * (1 - 0.40))  # the pattern's
    assert (
        "published 1-year no-upfront rate (39% below on-demand)" in one_year.loc["g5.xlarge", "price_basis"]
    )


def test_bundled_aws_rates_are_below_on_demand_and_dated() -> None:
    from perdollar.catalog import load

    rates = bundled_rates()
    offers = load().offers_frame()
    on_demand = offers[(offers["cloud"] == "aws") & (offers["market"] == "on-demand")]
    checked = 0
    for row in on_demand.itertuples(index=False):
        for years in (1, 3):
            rate = rates.get(("aws", row.instance_type, row.region, years))
            if rate is not None:
                assert 0 < rate.price_per_hour < row.price_per_hour
                checked += 1
    assert checked > 100
    assert all(r.as_of <= dt.date.today() and r.source for r in rates.values())


def test_market_filters_take_committed_and_lists() -> None:
    every = pd.concat([_offers(), committed_offers(_offers(), TERMS, {})], ignore_index=True)
    assert set(allowed_offers(every, market="committed")["market"]) == {"committed-1y", "committed-3y"}
    assert set(allowed_offers(every, market="on-demand,committed-3y")["market"]) == {
        "on-demand",
        "committed-3y",
    }
    assert set(allowed_offers(every, market="any")["market"]) == {
        "on-demand",
        "spot",
        "committed-1y",
        "committed-3y",
    }


def test_comparison_line_gives_each_terms_break_even() -> None:
    every = pd.concat([_offers(), committed_offers(_offers(), TERMS, {})], ignore_index=True)
    billed = bill_over_horizon(every, 12)
    g5 = billed[(billed["instance_type"] == "g5.xlarge")]
    bills = pd.DataFrame({"market": g5["market"], "usd_per_hour": g5["price_per_hour"] * 2})
    line = market_comparison(bills, "2x g5.xlarge")
    # 1y: 0.7 of on-demand, 0.7 / 0.4 = 175 % of spot; 3y over 12 months: 0.5 × 3 = 1.5 → never.
    assert (
        "committed-1y $1.40/h (break-even: busy ≥70% of the horizon vs on-demand; never pays vs spot (175%))"
        in line
    )
    assert "committed-3y $3.00/h (break-even: never pays vs on-demand (150%)" in line


def _llm_top_market(horizon: int) -> tuple[str, list[str]]:
    result = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--cloud", "aws",
        "--market", "on-demand,committed", "--horizon", str(horizon), "--json", "--no-store",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    return answer["deployments"][0]["market"], answer["notes"]


def test_a_term_is_chosen_only_where_the_horizon_makes_it_cheapest() -> None:
    # Every bundled AWS discount is below 50 %, so half a year of a 1-year term (twice its rate)
    # costs more than on-demand: the 6-month answer must be on demand.
    market, notes = _llm_top_market(6)
    assert market == "on-demand"
    assert any("never pays vs on-demand" in n for n in notes)
    # Over 3 years the 3-year term bills its own (lowest) rate: it wins.
    market, notes = _llm_top_market(36)
    assert market == "committed-3y"
    assert any(n.startswith("markets for") and "busy ≥" in n for n in notes)


def test_training_ranks_committed_terms_and_compares_the_markets() -> None:
    result = run_perdollar(
        "recommend", "vit-b16", "--samples", "1e9", "--market", "committed", "--cloud", "aws",
        "--json", "--no-store",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    ranked = [e for e in answer["estimates"] if e["feasible"]]
    assert ranked and {e["market"] for e in ranked} <= {"committed-1y", "committed-3y"}
    assert all(COMMITTED_FLAG in e["flags"] for e in ranked)
    comparison = next(n for n in answer["notes"] if n.startswith("markets for"))
    assert "on-demand $" in comparison and "committed-3y $" in comparison and "break-even" in comparison


def test_any_holds_committed_terms_only_with_a_horizon() -> None:
    from perdollar.ask.offers import wants_committed

    assert not wants_committed("any", None)
    assert wants_committed("any", 12)
    assert wants_committed("committed", None) and wants_committed("spot,committed-1y", None)
    assert not wants_committed("on-demand,spot", 36)
