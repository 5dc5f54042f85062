"""`perdollar recommend WORKLOAD --inference` end to end, through the real console entry point."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError


def test_recommend_inference_ranks_deployments_across_clouds() -> None:
    completed = run_perdollar(
        "recommend",
        "mlp",
        "--inference",
        "--qps",
        "2000",
        "--p99-ms",
        "20",
        "--json",
        "--no-store",
        "--top",
        "40",
        "--batch-size",
        "8",
        columns=200,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    payload = json.loads(completed.stdout)
    rows = payload["deployments"]
    assert rows, payload["excluded"]
    assert len({row["cloud"] for row in rows}) >= 2  # across clouds
    costs = [row["usd_per_million_requests"] for row in rows]
    assert costs == sorted(costs)
    for row in rows:
        assert row["replicas"] >= 1 and row["instances"] >= 1
        assert 1 <= row["batch"] <= 8  # --batch-size caps the batch a replica runs
        assert row["latency_ms"] <= 20.0
        # $ per million requests follows from the deployment's $/h at 2000 requests/s.
        expected = row["deployment_price_per_hour"] / (2000 * 3600) * 1e6
        assert abs(row["usd_per_million_requests"] - expected) <= 1e-9 * max(expected, 1)
    assert payload["serving_mode"]["mode"] == "real-time"
    assert payload["question"]["kind"] == "inference"
    assert any("CPU-only" in row["reason"] for row in payload["excluded"])


def test_impossible_slo_exits_3_with_the_reason() -> None:
    completed = run_perdollar(
        "recommend",
        "mlp",
        "--inference",
        "--qps",
        "100",
        "--p99-ms",
        "0.0001",
        "--no-store",
        "--cloud",
        "aws",
        "--batch-size",
        "1",
        columns=200,
    )
    assert completed.returncode == 3, completed.stderr[-2000:]
    assert "no deployment serves 100 requests/s within P99 ≤ 0.0001 ms" in completed.stderr
    assert "SLO at every batch size" in completed.stderr
    assert "Traceback" not in completed.stderr


def test_missing_slo_is_a_usage_error() -> None:
    from perdollar.ask.building import serving_question

    with pytest.raises(PerdollarError, match="--inference needs a latency SLO") as caught:
        serving_question(
            "mlp",
            qps=100,
            p99_ms=None,
            p95_ms=None,
            max_wait_ms=None,
            batch_size=None,
            precision=None,
            market="any",
            clouds=[],
            regions=[],
        )
    assert caught.value.exit_code == 2


def test_a_stored_inference_question_can_be_asked_again() -> None:
    from perdollar.ask import answer
    from perdollar.ask.building import serving_question
    from perdollar.goals import ServingGoal
    from perdollar.store.codec import question_from_payload, recommendation_to_payload

    question = serving_question(
        "mlp",
        qps=500,
        p99_ms=None,
        p95_ms=10.0,
        max_wait_ms=None,
        batch_size=2,
        precision=None,
        market="on-demand",
        clouds=["aws"],
        regions=[],
    )
    first = answer(question)
    stored = question_from_payload(recommendation_to_payload(first)["question"])
    again = answer(stored)
    assert isinstance(stored.goal, ServingGoal) and stored.goal.max_batch == 2
    assert [e.label for e in again.estimates[:3]] == [e.label for e in first.estimates[:3]]
    assert again.estimates[0].serving == first.estimates[0].serving
    assert all(e.market == "on-demand" for e in again.estimates)
