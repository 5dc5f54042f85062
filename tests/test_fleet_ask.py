"""A fleet over a day is a route of ``perdollar.ask.answer``: asked from Python, by ``recommend``
and by ``history reevaluate`` alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import perdollar.ask
from cli_runner import run_perdollar
from perdollar.catalog.model import DEFAULT_INSTANCE_START_S
from perdollar.goals import FleetGoal, FleetTraffic, LatencyObjective, ServingGoal
from perdollar.price.fleet import DEFAULT_AVAILABILITY, DEFAULT_MIN_REPLICAS
from perdollar.question import LanguageModelSettings, Question
from perdollar.select.model import Recommendation
from perdollar.store import open_store
from perdollar.vocabulary import TOKEN_SERVING_OBJECTIVE

CURVE = "hour,requests_per_second\n0,4\n8,24\n20,10\n"
QUESTION = (
    "recommend", "llama-3.1-8b", "--inference", "--input-tokens", "1500", "--output-tokens", "300",
    "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--cloud", "aws", "--target-utilisation", "0.7",
)  # fmt: skip


def _asked_from_python() -> Question:
    """The question ``QUESTION --load-curve day.csv`` asks, written by hand."""
    mean_rps = (4 * 8 + 24 * 12 + 10 * 4) / 24
    objectives = (LatencyObjective("ttft", 0.99, 800.0), LatencyObjective("tpot", 0.99, 50.0))
    serving = ServingGoal(qps=mean_rps, objectives=objectives, objective=TOKEN_SERVING_OBJECTIVE)
    traffic = FleetTraffic("load-curve", "day.csv", CURVE, 0.7, DEFAULT_MIN_REPLICAS,
                           DEFAULT_INSTANCE_START_S, DEFAULT_AVAILABILITY)  # fmt: skip
    return Question(
        workload_name="llama-3.1-8b", clouds=("aws",), goal=FleetGoal(serving, traffic),
        language_model=LanguageModelSettings(input_tokens=1500, output_tokens=300),
    )  # fmt: skip


@pytest.fixture(scope="module")
def stored_fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A store holding the fleet ``recommend --load-curve`` answered, and its ``--json`` answer."""
    folder = tmp_path_factory.mktemp("fleet")
    (folder / "day.csv").write_text(CURVE)
    store = folder / "results.db"
    done = run_perdollar(*QUESTION, "--load-curve", str(folder / "day.csv"), "--json", store=store)
    assert done.returncode == 0, done.stderr[-3000:]
    return store, json.loads(done.stdout)


def test_a_question_with_traffic_asked_from_python_is_answered_by_the_fleet(
    stored_fleet: tuple[Path, dict[str, Any]],
) -> None:
    _, shown = stored_fleet
    recommendation = perdollar.ask.answer(_asked_from_python())
    assert recommendation.estimates == () and recommendation.fleet is not None
    figures = recommendation.fleet
    assert [row["start"] for row in figures["intervals"]] == ["00:00", "08:00", "20:00"]
    # The command line's answer to the same question, figure for figure.
    for key in ("intervals", "fleet", "autoscaled_single_type", "static_peak", "saving_vs_static_peak"):
        assert figures[key] == shown[key], key
    goal = recommendation.question.goal
    assert isinstance(goal, FleetGoal) and goal.traffic.text == CURVE


def test_history_reevaluate_asks_a_stored_fleet_again_through_ask(
    stored_fleet: tuple[Path, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, shown = stored_fleet
    asked: list[Question] = []
    answer = perdollar.ask.answer

    def recording(question: Question, **given: Any) -> Recommendation:
        asked.append(question)
        return answer(question, **given)

    monkeypatch.setattr(perdollar.ask, "answer", recording)
    done = run_perdollar("history", "reevaluate", shown["recommendation_id"], "--json", store=store)
    assert done.returncode == 0, done.stderr[-3000:]
    again = json.loads(done.stdout)
    with open_store(f"sqlite:///{store}") as opened:
        old = opened.get_recommendation(shown["recommendation_id"])
        new = opened.get_recommendation(again["new_id"])
    assert asked == [old.question]
    assert new.fleet is not None and new.fleet["intervals"] == shown["intervals"]
    assert not again["flipped"] and again["new"] == again["old"]
