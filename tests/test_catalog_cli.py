"""`perdollar catalog` through the command line's entry point."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog

TINY = Path(__file__).parent / "fixtures" / "catalog" / "tiny"


def test_a10g_on_aws_lists_the_g5_family_at_snapshot_prices() -> None:
    result = run_perdollar("catalog", "--accelerator", "a10g", "--cloud", "aws", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert {r["instance_type"].split(".")[0] for r in rows} == {"g5"}
    required = {"cloud", "instance_type", "region", "vcpus", "memory_gib", "accelerator", "accelerator_count",
                "accelerator_memory_gib", "network_gbps", "price_per_hour", "spot_price_per_hour",
                "spot_interruption", "captured_at"}  # fmt: skip
    assert all(required <= set(r) for r in rows)
    row = next(r for r in rows if r["instance_type"] == "g5.2xlarge" and r["region"] == "us-east-1")
    snapshot = catalog.load()
    offer = next(o for o in snapshot.offers if o.instance_type == "g5.2xlarge" and o.region == "us-east-1"
                 and o.market == "on-demand")  # fmt: skip
    assert row["price_per_hour"] == offer.price_per_hour
    assert row["captured_at"] == offer.captured_at.isoformat()
    assert row["accelerator"] == "A10G" and row["accelerator_count"] == 1
    prices = [r["price_per_hour"] for r in rows]
    assert prices == sorted(prices)


def test_show_parses_a_sagemaker_name() -> None:
    result = run_perdollar("catalog", "show", "ml.g4dn.12xlarge", "--json")
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["name_parts"] == {"prefix": "ml", "family": "g", "generation": "4", "attributes": "dn",
                                   "size": "12xlarge"}  # fmt: skip
    assert (shown["accelerator"], shown["accelerator_count"]) == ("T4", 4)
    assert shown["accelerator_specs"]["key"] == "T4"
    assert shown["accelerator_specs"]["memory_bandwidth_gbps"] == 320
    assert len(shown["offers"]) > 5 and all(o["instance_type"] == "g4dn.12xlarge" for o in shown["offers"])


def test_filters_and_sort_in_the_spot_market() -> None:
    result = run_perdollar("catalog", "--accelerator", "H100", "--min-accelerators", "8", "--market", "spot",
                 "--sort", "spot", "--min-accelerator-memory", "80", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert rows and all(r["accelerator_count"] >= 8 and r["accelerator_memory_gib"] >= 80 for r in rows)
    spot = [r["spot_price_per_hour"] for r in rows]
    assert None not in spot and spot == sorted(spot)
    assert {r["cloud"] for r in rows} == {"aws", "gcp", "azure"}


def test_table_output_shows_the_snapshot_age() -> None:
    result = run_perdollar("catalog", "--cloud", "gcp", "--cpu-only", "--limit", "3")
    assert result.returncode == 0, result.stderr
    assert "days old" in result.stdout and "CPU only" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (("catalog", "--cloud", "oracle"), "unknown cloud 'oracle'"),
    (("catalog", "--accelerator", "a10gg"), "unknown accelerator 'a10gg' — did you mean"),
    (("catalog", "--region", "us-east-9"), "unknown region 'us-east-9'"),
    (("catalog", "--max-price", "-1"), "negative"),
    (("catalog", "show", "g5.2xlarg"), "did you mean g5.2xlarge"),
    (("catalog", "refresh", "--cloud", "gcp", "--source", "aws-api"), "--source aws-api refreshes AWS only"),
])  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    result = run_perdollar(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_broken_user_snapshot_names_the_file() -> None:
    from perdollar.paths import catalog_snapshot_dir

    folder = catalog_snapshot_dir() / "20990101T000000Z-aws"
    shutil.copytree(TINY, folder)
    (folder / "accelerators.csv").write_text("key,vendor\nA10G,NVIDIA\n")
    result = run_perdollar("catalog", "--json")
    assert result.returncode == 2
    assert "accelerators.csv lacks column(s)" in result.stderr and "Traceback" not in result.stderr


def test_help_teaches_with_examples() -> None:
    result = run_perdollar("catalog", "--help")
    assert result.returncode == 0
    assert "perdollar catalog --accelerator a10g --cloud aws" in result.stdout
    assert "perdollar catalog refresh --from" in run_perdollar("catalog", "refresh", "--help").stdout


def test_refresh_without_credentials_fails_cleanly_and_keeps_the_catalog(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)  # run_perdollar starts from this process's environment
    env = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
           "AWS_CONFIG_FILE": os.devnull}  # fmt: skip
    result = run_perdollar("catalog", "refresh", "--source", "aws-api", "--region", "us-east-1", env=env)
    assert result.returncode == 2
    assert "no AWS credentials" in result.stderr and "Traceback" not in result.stderr
    assert catalog.load().snapshot_id.startswith("bundled-")


def test_accelerators_lists_per_device_specs_with_their_stack() -> None:
    result = run_perdollar("catalog", "accelerators", "--json")
    assert result.returncode == 0, result.stderr
    chips = {c["key"]: c for c in json.loads(result.stdout)}
    assert chips["A10G"]["software_stack"] == "cuda" and chips["TPU-v5e"]["software_stack"] == "xla"
    assert chips["Inferentia2"]["software_stack"] == "neuron" and chips["MI300X"]["software_stack"] == "rocm"
    assert chips["H100-SXM5-80GB"]["memory_gib"] == 80
