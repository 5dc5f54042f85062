"""A training job's fixed costs: every node is provisioned, pulls the image, downloads what the job
reads first and starts up before its first step; the job waits for that once and pays it on every
node, so a short job runs cheapest on one node while a long job's ranking barely moves."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.price.fixed_costs import PROVISIONING_SECONDS, STARTUP_SECONDS, FixedCosts, fixed_hours


def _answer(*args: str) -> dict[str, Any]:
    done = run_perdollar("recommend", *args, "--json", "--no-store", "--top", "300")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_a_short_lora_job_is_cheaper_on_one_node_than_on_four() -> None:
    # About 23 minutes of work on one 8-GPU p5.48xlarge, 6 on four of them.
    answer = _answer("llama-3.1-8b", "--finetune", "lora", "--tokens", "1e8", "--cloud", "aws",
                     "--market", "on-demand", "--region", "us-east-1")  # fmt: skip
    p5 = {e["nodes"]: e for e in answer["estimates"] if e["instance_type"] == "p5.48xlarge" and e["feasible"]}
    one, four = p5[1], p5[4]
    assert one["expected_time_hours"] - one["fixed_hours"] < 1.0  # a short job: under an hour of work
    assert one["fixed_hours"] * 3600 >= PROVISIONING_SECONDS + STARTUP_SECONDS
    # Four nodes finish sooner but pay four nodes' start-up: well over the one node's whole bill.
    assert four["expected_cost_usd"] > 1.5 * one["expected_cost_usd"]
    assert four["fixed_usd"] == pytest.approx(4 * one["fixed_usd"], rel=0.05)
    ranked = [e["label"] for e in answer["estimates"] if e["feasible"]]
    assert ranked.index(one["label"]) < ranked.index(four["label"])
    assert any(n.startswith("fixed costs per node: provisioning 600 s") and "base weights" in n
               for n in answer["notes"])  # fmt: skip


def test_a_long_jobs_ranking_is_unchanged_in_substance() -> None:
    answer = _answer("vit-b16", "--samples", "3e10", "--objective", "cost", "--max-nodes", "4")
    feasible = [e for e in answer["estimates"] if e["feasible"]]
    top = feasible[0]
    assert top["fixed_usd"] < 0.005 * top["expected_cost_usd"]
    # Ranked by the cost before its fixed part, the same candidate comes first.
    before = min(feasible, key=lambda e: e["expected_cost_usd"] - e["fixed_usd"])
    assert before["label"] == top["label"]


def test_the_dataset_is_shared_over_the_nodes_and_the_weights_read_by_each() -> None:
    frame = pd.DataFrame({"nodes": [1, 4], "network_gbps": [100.0, 100.0]})
    bare = fixed_hours(frame, FixedCosts())
    weights = fixed_hours(frame, FixedCosts(weights_bytes=100e9)) - bare
    data = fixed_hours(frame, FixedCosts(data_bytes=400e9)) - bare
    assert weights[0] == pytest.approx(weights[1]) and weights[0] > 0
    assert data[0] == pytest.approx(4 * data[1], rel=0.01)
    assert bare[0] * 3600 == pytest.approx(PROVISIONING_SECONDS + STARTUP_SECONDS + 10e9 / 150e6, abs=1)


def test_compare_bills_the_fixed_costs_a_ranking_bills() -> None:
    done = run_perdollar("compare", "vit-b16", "4x g5.2xlarge on-demand", "1x g5.12xlarge on-demand",
                         "--samples", "1e8", "--no-store", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    four, one = json.loads(done.stdout)["comparison"]["estimates"]
    assert one["fixed_hours"] == pytest.approx(four["fixed_hours"], rel=0.05) and one["fixed_hours"] > 0.2
    for estimate in (four, one):
        assert estimate["fixed_usd"] == pytest.approx(estimate["fixed_hours"] * estimate["price_per_hour"])
        # On demand every hour is billed: the run's and the fixed ones alike.
        run_hours = estimate["expected_time_hours"] - estimate["fixed_hours"]
        assert estimate["expected_cost_usd"] - estimate["fixed_usd"] == pytest.approx(
            run_hours * estimate["price_per_hour"], rel=1e-6
        )
