"""`catalog refresh --cloud aws` against botocore's Stubber with recorded-shape responses."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import shutil
import socket
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from cli_runner import run_perdollar
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
    # newest price per zone (1b's older 0.50 is superseded by 0.3958); ranked at the zones' median
    assert (spot.price_min_per_hour, spot.price_per_hour, spot.price_max_per_hour) == (0.3958, 0.4102, 0.5120)
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


# ---- catalog refresh through gpuhunt: failures read as one line, bad files keep the old offers ----
GPUHUNT_FILES = Path(__file__).parent / "fixtures" / "gpuhunt"


def test_no_network_is_one_line_and_verbose_shows_the_rest() -> None:
    pytest.importorskip("gpuhunt")
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    env = {"GPUHUNT_CATALOG_URL": f"http://127.0.0.1:{port}/v3", "NO_PROXY": "127.0.0.1"}
    quiet = run_perdollar("catalog", "refresh", env=env, timeout=120, columns=200)
    loud = run_perdollar("catalog", "refresh", "--verbose", env=env, timeout=120, columns=200)
    lines = quiet.stderr.strip().splitlines()
    assert quiet.returncode == 2 and len(lines) == 1, quiet.stderr[-2000:]
    assert "could not download gpuhunt's catalogs (" in lines[0] and "--verbose shows" in lines[0]
    assert "Traceback" not in quiet.stderr
    assert loud.returncode == 2 and "Failed to load aws catalog" in loud.stderr
    assert (
        "caused by URLError" in loud.stderr
        and loud.stderr.strip().splitlines()[-1] == lines[0].split(" (--verbose")[0]
    )


HEADER = "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor"
GOOD_ROW = "g5.xlarge,us-east-1,1.006,4,16.0,1,A10G,24.0,False,,nvidia"
BAD_AWS_FILES = {
    "negative prices": [GOOD_ROW.replace("1.006", "-1.006"), GOOD_ROW.replace("1.006", "-0.4")],
    "header only": [],
    "NaN price": [GOOD_ROW.replace("1.006", "nan")],
    "negative GPU count": [GOOD_ROW.replace(",1,A10G", ",-1,A10G")],
    "markup in a name": [GOOD_ROW.replace("g5.xlarge", "[bold red]g5.xlarge[/]")],
    "newline in a name": [GOOD_ROW.replace("g5.xlarge", '"g5.xlarge\nFORGED ROW"')],
    "infinite memory": [GOOD_ROW.replace(",16.0,", ",inf,")],
}


@pytest.mark.parametrize("case", list(BAD_AWS_FILES))
def test_a_provider_whose_file_fails_validation_keeps_its_offers(case: str, tmp_path: Path) -> None:
    shutil.copy(GPUHUNT_FILES / "runpod.csv", tmp_path / "runpod.csv")
    (tmp_path / "aws.csv").write_text("\n".join([HEADER, *BAD_AWS_FILES[case]]) + "\n")
    before = sum(o.cloud == "aws" for o in catalog.load().offers)
    done = run_perdollar("catalog", "refresh", "--from", str(tmp_path), "--captured-at", "2026-11-20",
                         timeout=120, columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "not refreshed: aws" in done.stderr and "previous offers are kept" in done.stderr
    assert not any(line.startswith("FORGED") for line in done.stderr.splitlines())  # never a row of its own
    fresh = catalog.load()  # the new snapshot loads, and later commands work
    assert fresh.snapshot_id.startswith("gpuhunt-refresh-")
    assert sum(o.cloud == "aws" for o in fresh.offers) == before
    assert any(o.cloud == "runpod" for o in fresh.offers)
    listed = run_perdollar("catalog", "--cloud", "aws", "--json", timeout=120)
    assert listed.returncode == 0 and json.loads(listed.stdout), listed.stderr[-1000:]


def test_a_snapshot_that_would_not_load_is_never_written(tmp_path: Path) -> None:
    from perdollar.catalog.snapshot_write import write_new_snapshot

    base = catalog.load()
    offer = next(o for o in base.offers if o.cloud == "aws")
    broken = [*base.offers, dataclasses.replace(offer, region="", price_per_hour=float("nan"))]
    with pytest.raises(PerdollarError, match="would not load"):
        write_new_snapshot(base, dict(base.instance_types), broken, dict(base.manifest), tmp_path, "bad")
    assert list(tmp_path.iterdir()) == []
    assert catalog.load().snapshot_id == base.snapshot_id


def test_prices_far_outside_their_family_are_flagged_like_stale_ones() -> None:
    from perdollar.catalog.price_outliers import PRICE_OUTLIER_FLAG

    bundled = catalog.load()
    placeholder = [o for o in bundled.offers if o.instance_type.startswith("tpu-v6e")
                   and o.region == "southamerica-west1" and o.market == "spot"]  # fmt: skip
    assert placeholder and all(o.price_per_hour == 700 for o in placeholder)  # the source's $700/h
    assert all(PRICE_OUTLIER_FLAG in o.flags for o in placeholder)
    usual = [o for o in bundled.offers if o.instance_type in ("g5.xlarge", "p5.48xlarge", "tpu-v6e-8")
             and o.region in ("us-east-1", "us-east5") and o.market == "on-demand"]  # fmt: skip
    assert usual and not any(PRICE_OUTLIER_FLAG in o.flags for o in usual)
    flagged = sum(PRICE_OUTLIER_FLAG in o.flags for o in bundled.offers)
    assert 0 < flagged < len(bundled.offers) / 50  # a few, not the catalog
    explained = run_perdollar("catalog", "flags", "--json", timeout=120)
    row = next(r for r in json.loads(explained.stdout) if r["flag"] == PRICE_OUTLIER_FLAG)
    assert row["offers"] == flagged and "median" in row["meaning"]


def test_recommend_shows_the_outlier_flag_on_the_placeholder_price() -> None:
    done = run_perdollar("recommend", "vit-b16", "--cloud", "gcp", "--region", "southamerica-west1",
                         "--market", "spot", "--samples", "1e8", "--no-store", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    estimates = json.loads(done.stdout)["estimates"]
    tpu = [e for e in estimates if "tpu-v6e" in e["label"]]
    assert tpu and all("price-outlier" in e["flags"] for e in tpu)
    assert not any("price-outlier" in e["flags"] for e in estimates if "n2d-standard-8 " in e["label"])


def test_a_name_in_a_hand_edited_snapshot_is_printed_as_text_not_markup() -> None:
    from perdollar.catalog.snapshot_write import write_new_snapshot
    from perdollar.paths import catalog_snapshot_dir

    base = catalog.load()
    key = ("aws", "g5.xlarge")
    marked = "[reverse]g5.xlarge[/reverse]"
    types = {k: v for k, v in base.instance_types.items() if k != key}
    types[("aws", marked)] = dataclasses.replace(base.instance_types[key], name=marked)
    offers = [dataclasses.replace(o, instance_type=marked) if (o.cloud, o.instance_type) == key else o
              for o in base.offers]  # fmt: skip
    write_new_snapshot(base, types, offers, dict(base.manifest), catalog_snapshot_dir(), "edited")
    listing = (
        "catalog",
        "--cloud",
        "aws",
        "--accelerator",
        "a10g",
        "--region",
        "us-east-1",
        "--limit",
        "500",
    )
    shown = run_perdollar(*listing, timeout=120, columns=250)
    assert shown.returncode == 0, shown.stderr[-1500:]
    assert marked in shown.stdout


def test_a_candidate_at_an_outlier_price_ranks_after_the_plausible_ones_and_is_named() -> None:
    from perdollar.catalog.snapshot_write import write_new_snapshot
    from perdollar.paths import catalog_snapshot_dir

    base = catalog.load()
    where = ("aws", "g5.xlarge", "us-east-1", "on-demand")  # a typo: 2 cents an hour for an A10G
    offers = [
        dataclasses.replace(o, price_per_hour=0.02)
        if (o.cloud, o.instance_type, o.region, o.market) == where
        else o
        for o in base.offers
    ]
    write_new_snapshot(
        base, dict(base.instance_types), offers, dict(base.manifest), catalog_snapshot_dir(), "typo"
    )
    question = ("recommend", "vit-b16", "--cloud", "aws", "--region", "us-east-1", "--market", "on-demand",
                "--samples", "1e8", "--no-store", "--json")  # fmt: skip
    done = run_perdollar(*question)
    assert done.returncode == 0, done.stderr[-1500:]
    answer = json.loads(done.stdout)
    feasible = [e for e in answer["estimates"] if e["feasible"]]
    # At 2 cents an hour it would top the list; flagged, it follows every plausible price.
    assert "g5.xlarge " not in feasible[0]["label"] and "price-outlier" not in feasible[0]["flags"]
    flagged = [i for i, e in enumerate(feasible) if "price-outlier" in e["flags"]]
    assert all(i > j for i in flagged for j, e in enumerate(feasible) if "price-outlier" not in e["flags"])
    named = (
        "flagged price-outlier or spot-far-below-peers are ranked after the rest, e.g. g5.xlarge on-demand"
    )
    assert named in answer["explanation"]


def test_refreshes_in_the_same_second_each_get_a_snapshot_of_their_own(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from perdollar.catalog.snapshot import read_snapshot
    from perdollar.catalog.snapshot_write import write_new_snapshot

    base = catalog.load()

    def refresh(price: float) -> Path:
        offers = [dataclasses.replace(base.offers[0], price_per_hour=price), *base.offers[1:]]
        return write_new_snapshot(base, dict(base.instance_types), offers, dict(base.manifest), tmp_path,
                                  "20261202T000000Z-gpuhunt")  # fmt: skip

    with ThreadPoolExecutor(3) as pool:
        folders = list(pool.map(refresh, (1.25, 2.5, 5.0)))
    assert len(set(folders)) == 3
    assert sorted(f.name for f in folders) == [
        "20261202T000000Z-gpuhunt",
        "20261202T000000Z-gpuhunt-2",
        "20261202T000000Z-gpuhunt-3",
    ]
    prices = sorted(read_snapshot(f).offers[0].price_per_hour for f in folders)
    assert prices == [1.25, 2.5, 5.0]  # none overwrote another's
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # nothing left aside
