"""`catalog refresh --cloud aws` against botocore's Stubber with recorded-shape responses."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from perdollar import catalog
from perdollar.catalog.refresh_aws import CARRIED_BUCKET_FLAG, refresh_aws
from perdollar.errors import PerdollarError
from perdollar.paths import catalog_snapshot_dir

RESPONSES = Path(__file__).parent / "fixtures" / "aws" / "us-east-1"
NOW = dt.datetime(2026, 11, 22, 3, 0, tzinfo=dt.UTC)


def _pages(name: str) -> list[dict[str, Any]]:
    return json.loads((RESPONSES / f"{name}.json").read_text())


def _spot_pages() -> list[dict[str, Any]]:
    pages = _pages("describe_spot_price_history")
    for page in pages:
        for entry in page["SpotPriceHistory"]:
            entry["Timestamp"] = dt.datetime.fromisoformat(entry["Timestamp"])
    return pages


def _client(service: str, region: str) -> Any:
    return boto3.client(
        service, region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
    )


@pytest.fixture
def stubbed() -> Any:
    ec2 = _client("ec2", "us-east-1")
    pricing = _client("pricing", "us-east-1")
    ec2_stub, pricing_stub = Stubber(ec2), Stubber(pricing)
    types = _pages("describe_instance_types")
    ec2_stub.add_response("describe_instance_types", types[0], {})
    ec2_stub.add_response("describe_instance_types", types[1], {"NextToken": "page-2"})
    products = _pages("get_products")
    pricing_stub.add_response("get_products", products[0], {"ServiceCode": "AmazonEC2", "Filters": ANY})
    pricing_stub.add_response("get_products", products[1],
                              {"ServiceCode": "AmazonEC2", "Filters": ANY, "NextToken": "p2"})  # fmt: skip
    spot = _spot_pages()
    spot_params = {"StartTime": ANY, "ProductDescriptions": ["Linux/UNIX"]}
    ec2_stub.add_response("describe_spot_price_history", spot[0], spot_params)
    ec2_stub.add_response("describe_spot_price_history", spot[1], {**spot_params, "NextToken": "s2"})
    clients = {"ec2": ec2, "pricing": pricing}
    with ec2_stub, pricing_stub:
        yield lambda service, region: clients[service]
        ec2_stub.assert_no_pending_responses()
        pricing_stub.assert_no_pending_responses()


def test_refresh_writes_a_snapshot_that_takes_precedence(stubbed: Any) -> None:
    base = catalog.load()
    folder = refresh_aws(base, ["us-east-1"], out_root=catalog_snapshot_dir(), clients=stubbed, now=NOW)
    fresh = catalog.load()
    assert fresh.path == folder
    assert fresh.snapshot_id == "aws-refresh-20261122T030000Z"
    assert fresh.captured_at == "2026-11-22"

    def offer(name: str, market: str, region: str = "us-east-1") -> Any:
        return next(o for o in fresh.offers
                    if o.instance_type == name and o.market == market and o.region == region)  # fmt: skip

    assert offer("g5.2xlarge", "on-demand").price_per_hour == 1.099
    spot = offer("g5.2xlarge", "spot")
    # newest price per zone: 1b's older 0.50 is superseded by 0.3958
    assert (spot.price_per_hour, spot.price_max_per_hour) == (0.3958, 0.5120)
    assert spot.captured_at == dt.date(2026, 11, 22)
    assert spot.interruption_bucket is not None and CARRIED_BUCKET_FLAG in spot.flags
    assert offer("inf2.xlarge", "on-demand").price_per_hour == 0.7582
    # regions not refreshed and other clouds are carried over unchanged
    old = next(o for o in base.offers if o.instance_type == "g5.2xlarge" and o.region == "eu-west-1")
    assert offer("g5.2xlarge", "on-demand", "eu-west-1") == old
    assert sum(o.cloud == "gcp" for o in fresh.offers) == sum(o.cloud == "gcp" for o in base.offers)
    # an unknown GPU and a CPU type the catalog does not list are left out
    names = {n for (c, n) in fresh.instance_types if c == "aws"}
    assert "g7e.2xlarge" not in names and "t3.micro" not in names
    # specs come from DescribeInstanceTypes
    g4dn = fresh.instance("g4dn.12xlarge")
    assert (g4dn.accelerator_count, g4dn.network_gbps, g4dn.efa_interfaces) == (4, 50.0, 1)
    assert g4dn.accelerator_memory_gib_total == pytest.approx(60.0)


def test_refresh_without_credentials_is_a_one_line_error() -> None:
    from botocore.exceptions import NoCredentialsError

    def no_credentials(service: str, region: str) -> Any:
        class Client:
            def get_paginator(self, operation: str) -> Any:
                raise NoCredentialsError()

        return Client()

    with pytest.raises(PerdollarError, match="no AWS credentials"):
        refresh_aws(catalog.load(), ["us-east-1"], out_root=catalog_snapshot_dir(), clients=no_credentials)
    assert catalog.load().snapshot_id.startswith("bundled-")  # nothing half-written took over


def test_api_errors_are_reported_and_nothing_is_written() -> None:
    ec2 = _client("ec2", "us-east-1")
    stub = Stubber(ec2)
    stub.add_client_error("describe_instance_types", "UnauthorizedOperation", "You are not authorized")
    with stub, pytest.raises(PerdollarError, match="UnauthorizedOperation"):
        refresh_aws(catalog.load(), ["us-east-1"], out_root=catalog_snapshot_dir(),
                    clients=lambda service, region: ec2)  # fmt: skip
    assert not any(catalog_snapshot_dir().iterdir())


def test_refresh_command_reports_the_new_snapshot(stubbed: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from perdollar.catalog import refresh_aws as refresh_module
    from perdollar.cli import app

    monkeypatch.setattr(refresh_module, "default_client_factory", stubbed)
    result = CliRunner().invoke(
        app, ["catalog", "refresh", "--cloud", "aws", "--region", "us-east-1", "--json"]
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["regions"] == ["us-east-1"] and summary["snapshot_id"].startswith("aws-refresh-")
    assert catalog.load().snapshot_id == summary["snapshot_id"]
