"""A stored question can be asked again from its fields alone (history reevaluate, sweep)."""

from __future__ import annotations

import dataclasses

from perdollar.ask import answer, recommend
from perdollar.goals import TrainingGoal


def test_answer_reasks_a_question_from_its_fields() -> None:
    first = recommend(
        "mlp",
        samples=1e9,
        deadline_hours=48.0,
        objective="cost",
        max_nodes=2,
        clouds=["aws"],
        weights=None,
        confidence=0.8,
    )
    assert first.question.workload_fingerprint  # the profile's, so stored measurements can be found
    assert isinstance(first.question.goal, TrainingGoal) and first.question.goal.confidence == 0.8
    again = answer(first.question)
    assert again.question == first.question
    assert [e.label for e in again.estimates[:5]] == [e.label for e in first.estimates[:5]]
    assert again.pareto == first.pareto
    top = again.estimates[0]
    assert top.cloud == "aws" and top.nodes in (1, 2) and top.p_meet_deadline >= 0.8
    # The cost objective ranks by expected cost to the target.
    costs = [e.expected_cost_usd for e in again.estimates if e.feasible]
    assert costs[0] == min(costs)


def test_recommendation_is_plain_frozen_data() -> None:
    rec = recommend("mlp", max_nodes=1, market="on-demand", clouds=["gcp"], regions=["us-central1"])
    assert all(e.market == "on-demand" and e.region == "us-central1" for e in rec.estimates)
    assert all(e.time_to_target_hours is None for e in rec.estimates)  # no target, no time
    assert dataclasses.is_dataclass(rec) and rec.explanation


def test_summary_names_the_top_choice_when_it_is_also_the_cheapest() -> None:
    rec = recommend("mlp", samples=1e9, deadline_hours=48.0, objective="cost", max_nodes=2, clouds=["aws"])
    feasible = [e for e in rec.estimates if e.feasible]
    fastest = min(feasible, key=lambda e: e.expected_time_hours or float("inf"))
    assert fastest.label != feasible[0].label  # the cheapest to the target is not the fastest
    # The sentence after "The fastest, …" must not say "It": a reader takes that to mean the fastest.
    assert "The fastest, " in rec.explanation
    assert "The top choice is also the cheapest feasible candidate." in rec.explanation
    assert "It is also" not in rec.explanation
