"""Questions stored before each kind of question had its own typed goal load into that goal and
are asked again by ``history reevaluate``.

``data/stored_questions.json`` holds the questions as the store kept them when every goal was a
loose field of the question (a training target, ``serving`` with its ``slo_ms`` pairs, a language
model's ``ttft_p99_ms``/``tpot_p99_ms`` among its settings, a fleet's ``traffic``).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_perdollar
from perdollar.ask import answer
from perdollar.goals import FleetGoal, LatencyObjective, ServingGoal, TrainingGoal
from perdollar.jsonable import to_jsonable
from perdollar.store import open_store
from perdollar.store.codec import question_from_payload

STORED: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "stored_questions.json").read_text()
)
ASKED_AGAIN = ("training", "network serving", "language-model serving", "fleet")


def test_a_stored_training_question_loads_into_its_training_goal() -> None:
    question = question_from_payload(STORED["training"])
    assert question.goal == TrainingGoal(
        objective="samples-per-dollar", target_samples=1e9, deadline_hours=72.0, budget_usd=500.0,
        confidence=0.8,
    )  # fmt: skip
    assert question.goal.kind == "train" and question.family == "network"
    language_model = question_from_payload(STORED["language-model training"])
    assert language_model.goal == TrainingGoal(target_samples=2e10)
    assert language_model.language_model is not None and language_model.language_model.seq_len == 4096


def test_a_stored_network_serving_question_loads_its_latency_objectives_into_its_serving_goal() -> None:
    goal = question_from_payload(STORED["network serving"]).goal
    assert goal == ServingGoal(
        qps=500.0,
        objectives=(LatencyObjective("latency", 0.99, 20.0), LatencyObjective("latency", 0.95, 10.0)),
        objective="usd-per-million-requests",
        max_wait_ms=3.0,
    )
    assert goal.kind == "inference"


def test_a_stored_language_model_serving_question_keeps_its_token_objectives_in_its_serving_goal() -> None:
    question = question_from_payload(STORED["language-model serving"])
    assert question.goal == ServingGoal(
        qps=5.0,
        objectives=(LatencyObjective("ttft", 0.99, 1000.0), LatencyObjective("tpot", 0.99, 50.0)),
        objective="usd-per-million-tokens",
    )
    assert question.language_model is not None and question.language_model.engine == "sglang"


def test_a_stored_fleet_loads_into_a_fleet_goal_with_its_traffic_and_its_serving_goal() -> None:
    goal = question_from_payload(STORED["fleet"]).goal
    assert isinstance(goal, FleetGoal) and goal.kind == "inference"
    assert goal.serving.qps == 15.0 and goal.serving.objective == "usd-per-million-tokens"
    assert goal.serving.objectives == (
        LatencyObjective("ttft", 0.99, 800.0),
        LatencyObjective("tpot", 0.99, 50.0),
    )
    assert goal.traffic.kind == "load-curve" and goal.traffic.target_utilisation == 0.7
    assert goal.traffic.text == STORED["fleet"]["traffic"]["text"]


@pytest.mark.parametrize("kind", list(STORED))
def test_a_stored_question_is_written_back_as_it_was_stored(kind: str) -> None:
    stored = STORED[kind]
    # A fleet was stored with its family undecided; it is decided when it is read back.
    assert to_jsonable(question_from_payload(stored)) == stored | {
        "family": stored["family"] or "language-model"
    }


@pytest.mark.parametrize("kind", ASKED_AGAIN)
def test_history_reevaluate_answers_a_question_stored_before_the_typed_goals(
    kind: str, tmp_path: Path
) -> None:
    store = tmp_path / "results.db"
    question = question_from_payload(STORED[kind])
    with open_store(f"sqlite:///{store}") as opened:
        row_id = opened.save_recommendation(answer(question))
    # The row holds the question exactly as it was stored before, whatever today's code writes.
    with sqlite3.connect(store) as connection:
        (text,) = connection.execute("select payload from recommendations where id = ?", (row_id,)).fetchone()
        payload = json.loads(text) | {"question": STORED[kind]}
        connection.execute(
            "update recommendations set payload = ? where id = ?", (json.dumps(payload), row_id)
        )
    done = run_perdollar("history", "reevaluate", row_id, "--json", store=store, columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    again = json.loads(done.stdout)
    assert again["stored_id"] == row_id and not again["flipped"] and again["new_id"]
    with open_store(f"sqlite:///{store}", create=False) as opened:
        asked_again = opened.get_recommendation(again["new_id"]).question
    assert asked_again.goal == question.goal and type(asked_again.goal) is type(question.goal)
