"""Data movement and storage: egress by hand, copy time, storage, and the ranking they change."""

from __future__ import annotations

import json

import numpy as np
import pytest

from cli_runner import run_perdollar
from perdollar.amounts import data_size_bytes
from perdollar.catalog.bill_data import continent_of, data_rates
from perdollar.price.data_movement import egress_usd, storage_usd, tiered_cost, transfer_hours

TWENTY_TB = 20e12  # decimal, as clouds bill: 20 TB = 20,000 GB


def test_sizes_are_decimal_unless_written_binary() -> None:
    assert data_size_bytes("20TB") == TWENTY_TB
    assert data_size_bytes("500 GB") == 500e9
    assert data_size_bytes("1TiB") == 2.0**40
    assert data_size_bytes("1.28M") is None  # a sample count, not a size


def test_inter_region_egress_within_a_cloud() -> None:
    aws = data_rates()["aws"]
    assert aws.inter_region_usd_per_gb == 0.02
    # 20,000 GB × $0.02 = $400 (it would be $409.60 with 1 TB = 1024 GB).
    assert egress_usd(TWENTY_TB, aws, "us-east-1", "aws", "us-west-2") == pytest.approx(400.0)
    assert egress_usd(TWENTY_TB, aws, "us-east-1", "aws", "us-east-1") == 0.0


def test_egress_across_continents_and_clouds() -> None:
    gcp, aws = data_rates()["gcp"], data_rates()["aws"]
    assert egress_usd(TWENTY_TB, gcp, "us-central1", "gcp", "europe-west4") == pytest.approx(20_000 * 0.05)
    # Another cloud is the internet: 10,000 GB at $0.09, then 10,000 GB at $0.085.
    assert egress_usd(TWENTY_TB, aws, "us-east-1", "azure", "eastus") == pytest.approx(900 + 850)


def test_tiers_charge_each_gigabyte_at_its_own_rate() -> None:
    tiers = ((0.0, 0.12), (1000.0, 0.11), (10000.0, 0.08))
    assert tiered_cost(500, tiers) == pytest.approx(60.0)
    assert tiered_cost(12000, tiers) == pytest.approx(120 + 990 + 160)


def test_copy_time_is_size_over_throughput() -> None:
    # 20e12 B × 8 / 10e9 bit/s = 16,000 s.
    assert transfer_hours(TWENTY_TB, 10.0) == pytest.approx(16000 / 3600)
    assert transfer_hours(0.0, 10.0) == 0.0


def test_storage_is_billed_per_gigabyte_month() -> None:
    cost = storage_usd(np.array([2e9, 2e9]), np.array([730.0, 73.0]), np.array([0.023, 0.023]))
    assert cost == pytest.approx([0.046, 0.0046])


def test_continents_from_region_names() -> None:
    assert continent_of("us-east-1") == continent_of("northamerica-northeast1") == continent_of("eastus")
    assert continent_of("europe-west4") == continent_of("eu-central-1") == continent_of("westeurope")
    assert continent_of("ap-northeast-1") == "asia-pacific"


def _top_and_estimates(*extra: str) -> tuple[dict, list[dict]]:
    done = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--json", "--no-store", "--top", "20",
                         *extra)  # fmt: skip
    assert done.returncode == 0, done.stderr
    estimates = [e for e in json.loads(done.stdout)["estimates"] if not e["excluded_reason"]]
    return estimates[0], estimates


def test_the_data_region_changes_the_ranking_and_prices_the_copy() -> None:
    plain_top, _ = _top_and_estimates()
    top, estimates = _top_and_estimates("--dataset-size", "20TB", "--data-region", "us-east-1")
    assert (plain_top["cloud"], plain_top["region"]) != ("aws", "us-east-1")
    assert (top["cloud"], top["region"]) == ("aws", "us-east-1")
    assert top["egress_usd"] == 0 and top["transfer_hours"] == 0
    _, away = _top_and_estimates(
        "--dataset-size", "20TB", "--data-region", "us-east-1", "--region", "us-west-2"
    )
    for e in away:  # 20,000 GB at AWS's $0.02/GB, copied at 10 Gbit/s before the run
        assert e["egress_usd"] == pytest.approx(400.0) and e["transfer_hours"] == pytest.approx(16000 / 3600)
        assert e["expected_time_hours"] > e["transfer_hours"]
    assert all(e["storage_usd"] > 0 for e in estimates)


def test_a_data_region_needs_a_size_and_a_known_region() -> None:
    missing = run_perdollar(
        "recommend", "vit-b16", "--samples", "1e9", "--data-region", "us-east-1", "--no-store"
    )
    assert missing.returncode != 0 and "--dataset-size 20TB" in missing.stderr
    unknown = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--dataset-size", "1TB",
                            "--data-region", "mars-1", "--no-store")  # fmt: skip
    assert unknown.returncode != 0 and "mars-1" in unknown.stderr
