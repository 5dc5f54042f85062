"""Through the real CLI: what one command prints, the next one accepts.

The label ``recommend --json`` prints for its top choice goes to ``compare``, ``export`` and
``sweep --only``; the forms ``compare`` prints go to ``export``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.configuration import Configuration, parse_configuration


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a perdollar home this module's commands share."""
    return {"PERDOLLAR_HOME": str(tmp_path_factory.mktemp("perdollar-home"))}


@pytest.fixture(scope="module")
def recommended(home: dict[str, str]) -> list[dict]:
    """The estimates `recommend --json` prints for mlp on AWS (AWS: `export` describes AWS only)."""
    done = run_perdollar(
        "recommend",
        "mlp",
        "--cloud",
        "aws",
        "--max-nodes",
        "2",
        "--json",
        "--no-store",
        env=home,
        columns=200,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [e for e in json.loads(done.stdout)["estimates"] if e["feasible"]]


def test_compare_accepts_the_labels_recommend_prints(recommended: list[dict], home: dict[str, str]) -> None:
    top, other = recommended[0], recommended[3]
    done = run_perdollar("compare", "mlp", top["label"], other["label"], "--json", env=home, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    comparison = json.loads(done.stdout)["comparison"]
    assert comparison["labels"] == [top["label"], other["label"]]
    # The same configurations, region included: compare priced what recommend ranked.
    assert [e["label"] for e in comparison["estimates"]] == [top["label"], other["label"]]
    assert [e["price_per_hour"] for e in comparison["estimates"]] == pytest.approx(
        [top["price_per_hour"], other["price_per_hour"]]
    )


def test_export_accepts_the_label_recommend_prints(recommended: list[dict], home: dict[str, str]) -> None:
    top = recommended[0]
    done = run_perdollar("export", top["label"], "--format", "sagemaker", "--json", env=home, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    description = json.loads(done.stdout)
    assert description["region"] == top["region"]  # the label's region, not the cheapest one
    assert description["estimator"]["instance_type"] == f"ml.{top['instance_type']}"
    assert description["estimator"]["instance_count"] == top["nodes"]
    assert description["estimator"]["use_spot_instances"] is (top["market"] == "spot")
    assert description["configuration"] == top["label"]
    assert description["price_per_hour_usd"] == pytest.approx(top["price_per_hour"], rel=1e-3)


def test_export_accepts_the_forms_compare_takes_and_prints(home: dict[str, str]) -> None:
    text = "4 x g5.2xlarge spot in us-west-2"
    done = run_perdollar("compare", "mlp", text, "1x g5.12xlarge on-demand", "--json", env=home, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    comparison = json.loads(done.stdout)["comparison"]
    printed = [*comparison["labels"], *(e["label"] for e in comparison["estimates"])]
    assert printed[0] == text and printed[2] == "4x g5.2xlarge spot (aws us-west-2)"
    for label in printed:
        exported = run_perdollar("export", label, "--format", "ec2", "--json", env=home, columns=200)
        assert exported.returncode == 0, exported.stderr[-2000:]
        description = json.loads(exported.stdout)
        wanted = parse_configuration(label)
        params = description["create_instances"]
        assert params["MinCount"] == params["MaxCount"] == wanted.nodes
        assert ("InstanceMarketOptions" in params) is (wanted.market == "spot")
        assert params["InstanceType"] == wanted.instance_type
    assert description["configuration"] == "1x g5.12xlarge on-demand (aws " + description["region"] + ")"


def test_sweep_only_measures_the_labels_named(
    recommended: list[dict], home: dict[str, str], tmp_path: Path
) -> None:
    chosen = [recommended[2]["label"], recommended[0]["label"]]
    args = ["sweep", "mlp", "--via", "skypilot", "--dry-run", "--cloud", "aws", "--max-nodes", "2"]
    args += ["--out", str(tmp_path), "--json", "--no-store", "--top", "5"]
    done = run_perdollar(*args, "--only", chosen[0], "--only", chosen[1], env=home, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(job["candidate"] for job in json.loads(done.stdout)["jobs"]) == sorted(chosen)


def test_sweep_only_with_a_configuration_not_ranked_is_a_one_line_error(
    home: dict[str, str], tmp_path: Path
) -> None:
    args = ["sweep", "mlp", "--via", "skypilot", "--dry-run", "--cloud", "aws", "--out", str(tmp_path)]
    done = run_perdollar(*args, "--no-store", "--only", "3x g5.xlarge spot", env=home, columns=200)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "--only '3x g5.xlarge spot' names none of the ranked candidates" in done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.glob("*.yaml"))
    unreadable = run_perdollar(*args, "--only", "three g5 please", env=home, columns=200)
    assert unreadable.returncode == 2 and "'three g5 please' is not understood" in unreadable.stderr


def test_inference_deployments_are_printed_as_labels(home: dict[str, str]) -> None:
    args = ["recommend", "mlp", "--inference", "--qps", "2000", "--p99-ms", "20", "--batch-size", "8"]
    done = run_perdollar(*args, "--top", "5", "--json", "--no-store", env=home, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    payload = json.loads(done.stdout)
    rows = payload["deployments"]
    assert rows
    for row in rows:
        parts = (row["instance_type"], row["market"], row["cloud"], row["region"])
        assert parse_configuration(row["label"]) == Configuration(row["instances"], *parts)
    assert payload["explanation"].startswith(f"Cheapest: {rows[0]['label']}, ")
