"""`perdollar recommend` and `perdollar compare` end to end on the bundled catalog."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar_process
from perdollar.cli import main

REQUIRED_ESTIMATE_FIELDS = {
    "cloud",
    "instance_type",
    "region",
    "market",
    "nodes",
    "accelerator",
    "accelerators_per_node",
    "samples_per_second",
    "samples_per_second_low",
    "samples_per_second_high",
    "basis",
    "bottleneck",
    "price_per_hour",
    "samples_per_dollar",
    "time_to_target_hours",
    "cost_to_target_usd",
    "expected_time_hours",
    "expected_cost_usd",
    "p_meet_deadline",
    "fits",
    "excluded_reason",
}


def test_recommend_json_shape_from_a_real_subprocess() -> None:
    # A whole process's stdout parsed as one JSON document, as a script piping it would read it.
    result = run_perdollar_process(
        "recommend",
        "mlp",
        "--samples",
        "1e9",
        "--deadline",
        "48h",
        "--market",
        "any",
        "--max-nodes",
        "2",
        "--json",
        "--no-store",
        "--show-excluded",
        timeout=240,
        columns=200,
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert {"estimates", "pareto", "explanation", "catalog_captured_at"} <= document.keys()
    estimates = document["estimates"]
    assert estimates and all(e.keys() >= REQUIRED_ESTIMATE_FIELDS for e in estimates)
    feasible = [e for e in estimates if e["feasible"]]
    excluded = [e for e in estimates if not e["feasible"]]
    assert feasible and estimates[: len(feasible)] == feasible  # feasible first, ranked
    assert all(e["excluded_reason"] for e in excluded)
    assert {e["market"] for e in feasible} <= {"spot", "on-demand"}
    assert {e["nodes"] for e in estimates} <= {1, 2}
    assert all(estimates[i]["feasible"] for i in document["pareto"])
    assert all(e["p_meet_deadline"] >= 0.9 for e in feasible)
    # Samples per dollar is throughput × 3600 / the price of all nodes.
    top = feasible[0]
    assert top["samples_per_dollar"] == pytest.approx(
        top["samples_per_second"] * 3600 / top["price_per_hour"]
    )
    assert top["cost_to_target_usd"] == pytest.approx(top["time_to_target_hours"] * top["price_per_hour"])
    assert document["explanation"].startswith("Top choice by samples per dollar")


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as stop:
        main(args)
    captured = capsys.readouterr()
    return int(stop.value.code or 0), captured.out, captured.err


def _exit_code(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _out, err = _run(args, capsys)
    return code, err


def test_deadline_nobody_meets_exits_3_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _exit_code(
        ["recommend", "mlp", "--samples", "1e13", "--deadline", "1h", "--no-store"], capsys
    )
    assert code == 3
    assert "no candidate finishes by 1.0 h" in err and "--deadline" in err
    assert "too short" in err or "longer" in err  # and by how much
    assert "Traceback" not in err


def test_budget_too_small_exits_3_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _exit_code(
        ["recommend", "mlp", "--samples", "1e12", "--budget", "0.01", "--no-store"], capsys
    )
    assert code == 3
    assert "budget of $0.01 is too small" in err and "--budget" in err


def test_bad_input_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, err = _exit_code(["recommend", "mlp", "--deadline", "48h", "--no-store"], capsys)
    assert code == 2 and "need a target" in err
    code, err = _exit_code(["recommend", "mlp", "--objective", "fastest", "--no-store"], capsys)
    assert code == 2 and "unknown objective" in err


def test_recommend_table_and_store(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        ["recommend", "mlp", "--samples", "1e9", "--cloud", "aws", "--region", "us-east-1", "--top", "3"],
        capsys,
    )
    assert code == 0, err
    assert "Best 3 by samples-per-dollar" in out and "Top choice by samples per dollar" in out
    assert "ranked on prices captured" in out and "stored as" in out
    from perdollar.store import open_store

    with open_store(None) as store:
        history = store.list_history()
    assert len(history) == 1


def test_compare_the_spot_article_shortlist(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        ["compare", "mlp", "4x g5.2xlarge spot", "1x g5.12xlarge on-demand", "--samples", "1e9", "--json"],
        capsys,
    )
    assert code == 0, err
    document = json.loads(out)
    comparison = document["comparison"]
    assert comparison["labels"] == ["4x g5.2xlarge spot", "1x g5.12xlarge on-demand"]
    assert [e["nodes"] for e in comparison["estimates"]] == [4, 1]
    assert [e["market"] for e in comparison["estimates"]] == ["spot", "on-demand"]
    ratio = comparison["ratios"][0]
    assert ratio["cost_ratio"] >= 1.0 and ratio["cost_ratio_sd"] >= 0.0
    assert "times" in comparison["summary"]
    assert "per sample" in comparison["summary"]  # mlp's unit is the sample
