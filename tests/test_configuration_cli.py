"""Through the real CLI: what one command prints, the next one accepts.

The label ``recommend --json`` prints for its top choice goes to ``compare``, ``export`` and
``sweep --only``; the forms ``compare`` prints go to ``export``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perdollar.configuration import Configuration, parse_configuration


def perdollar(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from perdollar.cli import main; main(sys.argv[1:])", *args],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "PERDOLLAR_HOME": str(home), "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("perdollar-home")


@pytest.fixture(scope="module")
def recommended(home: Path) -> list[dict]:
    """The estimates `recommend --json` prints for mlp on AWS (AWS: `export` describes AWS only)."""
    done = perdollar(
        "recommend", "mlp", "--cloud", "aws", "--max-nodes", "2", "--json", "--no-store", home=home
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [e for e in json.loads(done.stdout)["estimates"] if e["feasible"]]


def test_compare_accepts_the_labels_recommend_prints(recommended: list[dict], home: Path) -> None:
    top, other = recommended[0], recommended[3]
    done = perdollar("compare", "mlp", top["label"], other["label"], "--json", home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    comparison = json.loads(done.stdout)["comparison"]
    assert comparison["labels"] == [top["label"], other["label"]]
    # The same configurations, region included: compare priced what recommend ranked.
    assert [e["label"] for e in comparison["estimates"]] == [top["label"], other["label"]]
    assert [e["price_per_hour"] for e in comparison["estimates"]] == pytest.approx(
        [top["price_per_hour"], other["price_per_hour"]]
    )


def test_export_accepts_the_label_recommend_prints(recommended: list[dict], home: Path) -> None:
    top = recommended[0]
    done = perdollar("export", top["label"], "--format", "sagemaker", "--json", home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    description = json.loads(done.stdout)
    assert description["region"] == top["region"]  # the label's region, not the cheapest one
    assert description["estimator"]["instance_type"] == f"ml.{top['instance_type']}"
    assert description["estimator"]["instance_count"] == top["nodes"]
    assert description["estimator"]["use_spot_instances"] is (top["market"] == "spot")
    assert description["configuration"] == top["label"]
    assert description["price_per_hour_usd"] == pytest.approx(top["price_per_hour"], rel=1e-3)


def test_export_accepts_the_forms_compare_takes_and_prints(home: Path) -> None:
    text = "4 x g5.2xlarge spot in us-west-2"
    done = perdollar("compare", "mlp", text, "1x g5.12xlarge on-demand", "--json", home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    comparison = json.loads(done.stdout)["comparison"]
    printed = [*comparison["labels"], *(e["label"] for e in comparison["estimates"])]
    assert printed[0] == text and printed[2] == "4x g5.2xlarge spot (aws us-west-2)"
    for label in printed:
        exported = perdollar("export", label, "--format", "ec2", "--json", home=home)
        assert exported.returncode == 0, exported.stderr[-2000:]
        description = json.loads(exported.stdout)
        wanted = parse_configuration(label)
        params = description["create_instances"]
        assert params["MinCount"] == params["MaxCount"] == wanted.nodes
        assert ("InstanceMarketOptions" in params) is (wanted.market == "spot")
        assert params["InstanceType"] == wanted.instance_type
    assert description["configuration"] == "1x g5.12xlarge on-demand (aws " + description["region"] + ")"


def test_sweep_only_measures_the_labels_named(recommended: list[dict], home: Path, tmp_path: Path) -> None:
    chosen = [recommended[2]["label"], recommended[0]["label"]]
    args = ["sweep", "mlp", "--via", "skypilot", "--dry-run", "--cloud", "aws", "--max-nodes", "2"]
    args += ["--out", str(tmp_path), "--json", "--no-store", "--top", "5"]
    done = perdollar(*args, "--only", chosen[0], "--only", chosen[1], home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(job["candidate"] for job in json.loads(done.stdout)["jobs"]) == sorted(chosen)


def test_sweep_only_with_a_configuration_not_ranked_is_a_one_line_error(home: Path, tmp_path: Path) -> None:
    args = ["sweep", "mlp", "--via", "skypilot", "--dry-run", "--cloud", "aws", "--out", str(tmp_path)]
    done = perdollar(*args, "--no-store", "--only", "3x g5.xlarge spot", home=home)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "--only '3x g5.xlarge spot' names none of the ranked candidates" in done.stderr
    assert "Traceback" not in done.stderr and not list(tmp_path.glob("*.yaml"))
    unreadable = perdollar(*args, "--only", "three g5 please", home=home)
    assert unreadable.returncode == 2 and "'three g5 please' is not understood" in unreadable.stderr


def test_inference_deployments_are_printed_as_labels(home: Path) -> None:
    args = ["recommend", "mlp", "--inference", "--qps", "2000", "--p99-ms", "20", "--batch-size", "8"]
    done = perdollar(*args, "--top", "5", "--json", "--no-store", home=home)
    assert done.returncode == 0, done.stderr[-2000:]
    payload = json.loads(done.stdout)
    rows = payload["deployments"]
    assert rows
    for row in rows:
        parts = (row["instance_type"], row["market"], row["cloud"], row["region"])
        assert parse_configuration(row["label"]) == Configuration(row["instances"], *parts)
    assert payload["explanation"].startswith(f"Cheapest: {rows[0]['label']}, ")
