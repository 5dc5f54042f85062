"""One pipeline, the same answers: figures the commands gave before the application layer existed.

The pinned numbers were printed by ``recommend``, ``recommend --inference``, ``compare`` and
``history reevaluate`` of the version whose ``select`` stage still ran the whole job, on the
bundled catalog; the stored recommendation is one that version wrote (its question still a free
``options`` dictionary). A change to the bundled catalog or the fitted parameters moves them on
purpose; a change to the wiring must not.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.store import open_store

FIXTURES = Path(__file__).parent / "fixtures" / "store"


def run_cli(*args: str) -> dict:
    completed = run_perdollar(*args, "--json", columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_recommend_training_gives_the_same_ranking_and_figures() -> None:
    answer = run_cli("recommend", "vit-b16", "--samples", "1e9", "--deadline", "72h", "--no-store")
    top = [(e["instance_type"], e["market"], e["nodes"], e["region"]) for e in answer["estimates"][:3]]
    # Spot offers rank at their zones' typical price since the catalog kept each zone (AWS: the mean of
    # its zones): Azure's MI300X spot, one price in every zone, now leads the AWS machines that led at
    # their cheapest zone's capture. Each node's fixed costs put one node ahead of two.
    assert top == [
        ("Standard_ND96is_MI300X_v5", "spot", 1, "eastus2"),
        ("Standard_ND96isr_MI300X_v5", "spot", 1, "eastus2"),
        ("Standard_ND96isr_MI300X_v5", "spot", 2, "eastus2"),
    ]
    rates = [e["samples_per_second"] for e in answer["estimates"][:3]]
    assert rates == pytest.approx([11326.146092802845, 11326.146092802845, 22652.29218560569], rel=1e-9)
    first = answer["estimates"][0]
    assert first["expected_cost_usd"] == pytest.approx(219.87647925107896, rel=1e-9)
    assert first["fixed_usd"] == pytest.approx(2.087008, rel=1e-6)
    assert answer["question"]["confidence"] == 0.9 and "options" not in answer["question"]


def test_recommend_inference_gives_the_same_deployment() -> None:
    answer = run_cli(
        "recommend", "mlp", "--inference", "--qps", "500", "--p95-ms", "10", "--cloud", "aws", "--no-store"
    )
    top = answer["deployments"][0]
    # At its zones' typical spot price, g5g.xlarge in ap-northeast-2 falls behind g4ad.xlarge.
    assert (top["instance_type"], top["region"], top["market"]) == ("g4ad.xlarge", "us-east-1", "spot")
    assert (top["batch"], top["replicas"], top["instances"]) == (4, 1, 2)
    assert top["latency_ms"] == pytest.approx(4.6925052956194575, rel=1e-9)
    assert top["usd_per_million_requests"] == pytest.approx(0.11608333333333334, rel=1e-9)
    assert answer["question"]["serving"]["qps"] == 500


def test_compare_gives_the_same_ratios() -> None:
    answer = run_cli(
        "compare",
        "vit-b16",
        "4x g5.2xlarge spot",
        "1x g5.12xlarge on-demand",
        "--samples",
        "1e8",
        "--no-store",
    )
    comparison = answer["comparison"]
    rates = [e["samples_per_second"] for e in comparison["estimates"]]
    assert rates == pytest.approx([319.17094282082456, 1156.5724199960096], rel=1e-9)
    (ratio,) = comparison["ratios"]
    # The spot machine is priced in its cheapest region at a plausible price (us-east-2): the
    # cheaper ap-southeast-3 capture is marked spot-far-below-peers.
    assert comparison["estimates"][0]["region"] == "us-east-2"
    # Four nodes' fixed costs (provisioning, image pull, start-up) against one node's, at the spot
    # machine's typical zone price: 1.119 at the lowest zone without fixed costs.
    assert ratio["cost_ratio"] == pytest.approx(1.1135743959837041, rel=1e-9)
    assert ratio["cost_ratio_sd"] == pytest.approx(0.19194229085172612, rel=1e-9)
    assert ratio["speed_ratio"] == pytest.approx(0.27539717555542276, rel=1e-9)


def test_history_reevaluates_a_question_stored_by_the_earlier_version(tmp_path: Path) -> None:
    """A stored question with the old free ``options`` is read into today's fields and asked again."""
    import sqlalchemy as sa

    from perdollar.store import schema

    payload = json.loads((FIXTURES / "legacy_recommendation_mlp.json").read_text())
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    with open_store(url) as store:
        row = {
            "id": "legacy000001",
            "workload_fingerprint": payload["question"]["workload_fingerprint"],
            "workload_name": "mlp",
            "kind": "train",
            "objective": "samples-per-dollar",
            "catalog_snapshot_id": payload["catalog_snapshot_id"],
            "catalog_captured_at": payload["catalog_captured_at"],
            "created_at": payload["created_at"],
            "payload": json.dumps(payload),
            "top_choice": "1x g5g.xlarge spot (aws ap-northeast-2)",
        }
        with store.engine.begin() as connection:
            connection.execute(sa.insert(schema.recommendations).values(row))
        stored = store.get_stored_recommendation("legacy000001").recommendation
    assert stored.question.spot.interruption_rate == 0.1 and stored.question.top == 10
    assert stored.question.clouds == ("aws",) and stored.question.max_nodes == 2

    result = run_cli("history", "reevaluate", "legacy000001", "--store", url)
    with open_store(url) as store:
        new = store.get_stored_recommendation(result["new_id"]).recommendation
    # Asked again at today's catalog (spot at its zones' typical price, not the cheapest zone's), the
    # old top is found again and predicted as the earlier version predicted it; its cost moves only by
    # its price and by the fixed costs (provisioning, image pull, start-up) the earlier version lacked.
    old_top = payload["estimates"][0]
    old_label = "1x g5g.xlarge spot (aws ap-northeast-2)"
    assert result["flipped"] is (result["new_top"] != old_label)
    again = next(e for e in new.estimates if e.label == old_label)
    assert again.samples_per_second == pytest.approx(old_top["samples_per_second"], rel=1e-9)
    assert again.fixed_usd and again.fixed_usd > 0
    price_moved = again.price_per_hour / old_top["price_per_hour"]
    assert again.expected_cost_usd - again.fixed_usd == pytest.approx(
        old_top["expected_cost_usd"] * price_moved, rel=1e-6
    )
    assert new.question.spot.interruption_rate == 0.1 and "options" not in json.dumps(result)


def test_sweep_plans_the_candidates_the_question_ranks_first(tmp_path: Path) -> None:
    question = ("--samples", "1e9", "--deadline", "72h")
    ranked = run_cli("recommend", "vit-b16", *question, "--no-store")
    plan = run_cli(
        "sweep",
        "vit-b16",
        *question,
        "--via",
        "skypilot",
        "--dry-run",
        "--strategy",
        "top-k",
        "--top",
        "2",
        "--out",
        str(tmp_path / "plan"),
        "--no-store",
    )
    feasible = [e for e in ranked["estimates"] if not e["excluded_reason"]]
    first_hardware = {(e["cloud"], e["instance_type"]) for e in feasible[:5]}
    planned = {(job["resources"]["cloud"], job["resources"]["instance_type"]) for job in plan["jobs"]}
    assert planned and planned <= first_hardware
