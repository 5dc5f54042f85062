"""Managed services priced as billed: SageMaker's export quote and `recommend --service`."""

from __future__ import annotations

import fnmatch
import json

import pytest

from cli_runner import run_perdollar
from perdollar.catalog import load
from perdollar.catalog.managed import MANAGED_SPOT_FLAG, bundled_rates, managed_offers, rate_for


def _ec2_price(name: str, region: str = "us-east-1") -> float:
    offers = load().offers
    return next(
        o.price_per_hour
        for o in offers
        if (o.cloud, o.instance_type, o.region, o.market) == ("aws", name, region, "on-demand")
    )


def test_sagemaker_export_quotes_sagemakers_rate() -> None:
    result = run_perdollar("export", "1x g5.xlarge on-demand", "--format", "sagemaker", "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    rate = rate_for("sagemaker", "aws", "g5.xlarge", "training")
    assert rate is not None
    ec2 = _ec2_price("g5.xlarge", described["region"])
    assert described["ec2_price_per_hour_usd"] == pytest.approx(ec2, abs=1e-4)
    assert described["price_per_hour_usd"] == pytest.approx(ec2 * (1 + rate.surcharge_vs_vm), abs=1e-3)
    assert described["price_per_hour_usd"] > described["ec2_price_per_hour_usd"]
    assert "ml.g5.xlarge" in described["price_basis"] and rate.source in described["price_basis"]


def test_sagemaker_export_of_spot_quotes_managed_spot_not_the_ec2_spot_rate() -> None:
    result = run_perdollar("export", "1x g5.xlarge spot", "--format", "sagemaker", "--json")
    assert result.returncode == 0, result.stderr
    described = json.loads(result.stdout)
    rate = rate_for("sagemaker", "aws", "g5.xlarge", "training")
    assert rate is not None
    region = described["region"]
    wanted = ("aws", "g5.xlarge", region, "spot")
    ec2_spot = next(
        o.price_per_hour for o in load().offers if (o.cloud, o.instance_type, o.region, o.market) == wanted
    )
    assert described["ec2_price_per_hour_usd"] == pytest.approx(ec2_spot, abs=1e-4)
    assert described["price_per_hour_usd"] == pytest.approx(ec2_spot * (1 + rate.surcharge_vs_vm), abs=1e-3)
    assert "managed spot" in described["price_basis"]


def test_a_service_market_holds_only_its_machines_at_its_rate() -> None:
    offers = load().offers_frame()
    every = managed_offers(offers, "sagemaker", "training")
    assert set(every["market"]) == {"on-demand", "spot"}  # SageMaker's managed spot training
    sagemaker = every[every["market"] == "on-demand"]
    for row in sagemaker.head(50).itertuples(index=False):
        rate = rate_for("sagemaker", row.cloud, row.instance_type, "training")
        assert rate is not None
        assert row.price_per_hour == pytest.approx(row.vm_price_per_hour * (1 + rate.surcharge_vs_vm))
    # Every AWS machine on demand that a SageMaker pattern names is in its market, and no other.
    patterns = {r.instance_pattern for r in bundled_rates() if r.service == "sagemaker"}
    aws_on_demand = offers[(offers["cloud"] == "aws") & (offers["market"] == "on-demand")]
    named = {n for n in aws_on_demand["instance_type"] if any(fnmatch.fnmatch(n, p) for p in patterns)}
    assert named == set(sagemaker["instance_type"])


def test_sagemaker_managed_spot_is_its_rate_times_the_vms_spot_discount() -> None:
    offers = load().offers_frame()
    managed = managed_offers(offers, "sagemaker", "training")
    spot = managed[managed["market"] == "spot"]
    assert not spot.empty and all(MANAGED_SPOT_FLAG in f for f in spot["flags"])
    keys = ["cloud", "instance_type", "region"]
    on_demand = managed[managed["market"] == "on-demand"].set_index(keys)
    vm_spot = offers[offers["market"] == "spot"].drop_duplicates(keys).set_index(keys)
    for row in spot.head(40).itertuples(index=False):
        key = (row.cloud, row.instance_type, row.region)
        discount = vm_spot.loc[key, "price_per_hour"] / on_demand.loc[key, "vm_price_per_hour"]
        assert row.price_per_hour == pytest.approx(on_demand.loc[key, "price_per_hour"] * discount)
    # Inference endpoints have no spot market.
    assert set(managed_offers(offers, "sagemaker", "inference")["market"]) == {"on-demand"}


def test_recommend_with_a_service_ranks_in_its_market() -> None:
    result = run_perdollar(
        "recommend", "vit-b16", "--samples", "1e9", "--service", "sagemaker", "--json", "--no-store"
    )
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    ranked = [e for e in answer["estimates"] if e["feasible"]]
    assert ranked and all(rate_for("sagemaker", e["cloud"], e["instance_type"], "training") for e in ranked)
    assert all("priced-as-managed-service" in e["flags"] for e in ranked)
    assert all(MANAGED_SPOT_FLAG in e["flags"] for e in ranked if e["market"] == "spot")
    assert any("priced as sagemaker bills" in n for n in answer["notes"])


def test_an_unknown_service_or_a_spot_service_is_refused() -> None:
    result = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--service", "bedrock", "--no-store")
    assert result.returncode != 0 and "sagemaker, vertex, azureml" in result.stderr
    result = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--service", "vertex",
                           "--market", "spot", "--no-store")  # fmt: skip
    assert result.returncode != 0 and "bills on-demand only for training" in result.stderr
