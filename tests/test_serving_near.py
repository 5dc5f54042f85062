"""``--near``: serving deployments kept within a round trip of the users' places."""

from __future__ import annotations

import json

from cli_runner import run_perdollar
from perdollar.catalog.region_places import great_circle_km, region_locations, round_trip_ms

LLM_SERVING = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--top", "300")


def answered(*args: str) -> dict:
    completed = run_perdollar(*args, "--json", "--no-store", columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def refused(*args: str) -> str:
    completed = run_perdollar(*args, "--no-store", columns=200)
    assert completed.returncode == 2, completed.stdout[-2000:] + completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    lines = [line for line in completed.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, completed.stderr
    return lines[0]


def ms_from(place: tuple[str, str], cloud: str, region: str) -> float:
    """The estimated round trip; a region with no stated place ("lambda any") is nowhere near."""
    if (cloud, region) not in region_locations():
        return float("inf")
    here, there = region_locations()[place], region_locations()[(cloud, region)]
    return round_trip_ms(great_circle_km(here.latitude, here.longitude, there.latitude, there.longitude))


def test_a_language_model_near_us_east_1_is_ranked_only_in_regions_near_it() -> None:
    anywhere = answered(*LLM_SERVING)["deployments"]
    far = [row for row in anywhere if ms_from(("aws", "us-east-1"), row["cloud"], row["region"]) > 30]
    assert far, "without --near the ranking reaches regions far from us-east-1"

    result = answered(*LLM_SERVING, "--near", "us-east-1")
    rows = result["deployments"]
    assert rows
    assert all(ms_from(("aws", "us-east-1"), row["cloud"], row["region"]) <= 30 for row in rows)
    regions = {(row["cloud"], row["region"]) for row in rows}
    assert ("aws", "ap-northeast-2") not in regions and ("aws", "us-west-2") not in regions
    top = rows[0]
    kept = next(n for n in result["notes"] if n.startswith("near aws us-east-1"))
    assert "30 ms" in kept and "aws us-east-1 0 ms" in kept
    assert any(row["cloud"] == "lambda" for row in anywhere) and "lambda" in kept  # placeless: left out
    chosen = next(n for n in result["notes"] if n.startswith("the chosen region"))
    assert f"{top['cloud']} {top['region']}" in chosen
    assert f"{ms_from(('aws', 'us-east-1'), top['cloud'], top['region']):.0f} ms" in chosen
    assert result["question"]["near"]["places"] == ["us-east-1"]


def test_a_tighter_round_trip_keeps_only_the_same_metro() -> None:
    rows = answered(*LLM_SERVING, "--near", "us-east-1", "--near-rtt-ms", "3")["deployments"]
    assert rows and {(row["cloud"], row["region"]) for row in rows} <= {
        ("aws", "us-east-1"),
        ("gcp", "us-east4"),
    }


def test_several_places_keep_the_regions_near_any_of_them() -> None:
    rows = answered(*LLM_SERVING, "--near", "us-east-1,frankfurt", "--near-rtt-ms", "5")["deployments"]
    regions = {(row["cloud"], row["region"]) for row in rows}
    assert regions & {("aws", "eu-central-1"), ("gcp", "europe-west3"), ("azure", "germanywestcentral")}
    assert regions & {("aws", "us-east-1"), ("gcp", "us-east4")}
    assert regions <= {
        ("aws", "us-east-1"), ("gcp", "us-east4"),
        ("aws", "eu-central-1"), ("gcp", "europe-west3"), ("azure", "germanywestcentral"),
    }  # fmt: skip


def test_a_network_served_near_eastus_stays_near_it() -> None:
    result = answered(
        "recommend", "resnet50", "--inference", "--qps", "200", "--p99-ms", "50", "--near", "eastus"
    )
    rows = result["deployments"]
    assert rows and all(ms_from(("azure", "eastus"), row["cloud"], row["region"]) <= 30 for row in rows)
    assert any(n.startswith("near azure eastus") for n in result["notes"])


def test_compare_sizes_each_configuration_in_a_region_near_the_users() -> None:
    result = answered(
        "compare",
        "llama-3.1-8b",
        "--inference",
        "--rps",
        "5",
        "g6e.xlarge",
        "g5.xlarge",
        "--near",
        "us-west-2",
    )
    rows = result["candidates"]
    assert rows and all(ms_from(("aws", "us-west-2"), "aws", row["region"]) <= 30 for row in rows)


def test_an_unknown_place_is_refused_with_the_names_it_resembles() -> None:
    line = refused(*LLM_SERVING, "--near", "us-east-11")
    assert "--near 'us-east-11'" in line and "did you mean" in line and "us-east-1" in line


def test_a_place_with_no_priced_region_within_the_round_trip_names_the_nearest() -> None:
    line = refused(*LLM_SERVING, "--cloud", "aws", "--near", "auckland", "--near-rtt-ms", "10")
    assert "no priced region is within 10 ms" in line and "aws ap-southeast-2" in line
    assert "--near-rtt-ms" in line


def test_near_is_refused_where_it_means_nothing() -> None:
    assert "add --inference" in refused("recommend", "resnet50", "--samples", "1e8", "--near", "us-east-1")
    assert "add --near" in refused(*LLM_SERVING, "--near-rtt-ms", "20")
