"""Objectives, constraints, ties, Pareto front and the binding-constraint messages."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perdollar.catalog.filters import allowed_offers
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.goals import TrainingGoal
from perdollar.predict.frame import PREDICTION_COLUMNS, node_counts
from perdollar.price.frame import SpotAssumptions, Target
from perdollar.price.table import price_table
from perdollar.question import Question
from perdollar.select import build_recommendation
from perdollar.select import constraints as cand
from perdollar.select.objectives import parse_weights
from perdollar.select.pareto import pareto_indices, pareto_mask
from perdollar.select.ranking import select_candidates

# Three single-node shapes and their throughput (samples/s); prices per node-hour below.
SHAPES = {
    # instance: (accelerator, vcpus, samples/s, fits, excluded_reason)
    "small.gpu": ("A10G", 8, 1000.0, True, ""),
    "big.gpu": ("H100", 96, 5000.0, True, ""),
    "tiny.gpu": ("T4", 4, 300.0, False, ""),
    "trn.chip": ("Trainium", 32, 4000.0, True, "needs the neuron software stack"),
}
PRICES = {"small.gpu": 1.0, "big.gpu": 8.0, "tiny.gpu": 0.5, "trn.chip": 1.5}


def offers_frame() -> pd.DataFrame:
    rows = []
    for name, price in PRICES.items():
        for market, factor, bucket in (("on-demand", 1.0, None), ("spot", 0.4, "<5%")):
            rows.append(
                {
                    "cloud": "aws",
                    "instance_type": name,
                    "region": "us-east-1",
                    "market": market,
                    "price_per_hour": price * factor,
                    "price_max_per_hour": np.nan,
                    "interruption_bucket": bucket,
                    "captured_at": "2026-01-01",
                    "flags": (),
                    "vcpus": SHAPES[name][1],
                    "accelerator_name": name,
                    "accelerator_count": 1.0,
                    "accelerator_memory_gib_total": 24.0,
                    "network_gbps": 25.0,
                }
            )
    # A spot offer whose price equals on-demand: not a real spot market.
    rows.append(
        {**rows[0], "region": "eu-west-1", "market": "spot", "flags": ("spot-price-equals-on-demand",)}
    )
    return pd.DataFrame(rows)


def predictions_frame(node_counts: tuple[int, ...] = (1,)) -> pd.DataFrame:
    rows = []
    for name, (chip, _vcpus, rate, fits, excluded) in SHAPES.items():
        for nodes in node_counts:
            scaled = rate * nodes * (0.9 if nodes > 1 else 1.0)
            rows.append(
                {
                    "cloud": "aws",
                    "instance_type": name,
                    "accelerator_key": chip,
                    "nodes": nodes,
                    "accelerators_per_node": 1.0,
                    "samples_per_second": scaled,
                    "samples_per_second_low": scaled * 0.9,
                    "samples_per_second_high": scaled * 1.1,
                    "basis": "spec",
                    "bottleneck": "compute",
                    "step_time_s": 0.1,
                    "compute_time_s": 0.1,
                    "communication_time_s": 0.0,
                    "fits": fits,
                    "fit_reason": "" if fits else "needs 30 GiB per device, has 16 GiB",
                    "max_batch_that_fits": None,
                    "breakdown_s": {},
                    "excluded_reason": excluded,
                }
            )
    frame = pd.DataFrame(rows)
    assert set(PREDICTION_COLUMNS) <= set(frame.columns)  # the predict stage's declared output
    return frame


def question(**goal: object) -> Question:
    """A training question about the toy workload, with these fields of its goal."""
    return Question(workload_name="toy", workload_fingerprint="f", goal=TrainingGoal(**goal))  # type: ignore[arg-type]


def price_candidates(
    offers: pd.DataFrame,
    predictions: pd.DataFrame,
    target: Target,
    assumptions: SpotAssumptions,
    *,
    confidence: float = 0.9,
    stacks: dict[str, str] | None = None,
) -> pd.DataFrame:
    """The candidate table as the application layer builds it: priced, then marked."""
    return cand.mark_constraints(
        price_table(offers, predictions, target, assumptions), target, confidence=confidence, stacks=stacks
    )


def priced(target: Target, market: str = "any", confidence: float = 0.9) -> pd.DataFrame:
    offers = allowed_offers(offers_frame(), market=market)
    return price_candidates(offers, predictions_frame(), target, SpotAssumptions(), confidence=confidence)


def test_node_counts() -> None:
    assert node_counts(1) == (1,)
    assert node_counts(4) == (1, 2, 4)
    assert node_counts(6) == (1, 2, 4, 6)
    assert node_counts(8) == (1, 2, 4, 8)


def test_hard_constraints_are_kept_with_reasons() -> None:
    frame = priced(Target())
    reasons = dict(
        zip(
            frame["instance_type"] + "/" + frame["market"] + "/" + frame["region"],
            frame["reason"],
            strict=True,
        )
    )
    assert reasons["tiny.gpu/on-demand/us-east-1"] == cand.REASON_FIT
    assert reasons["trn.chip/spot/us-east-1"] == cand.REASON_STACK
    assert reasons["small.gpu/spot/eu-west-1"] == cand.REASON_NO_SPOT
    assert reasons["small.gpu/on-demand/us-east-1"] == cand.OK
    selection = select_candidates(frame, question(), keep_excluded=10)
    texts = set(selection.excluded["excluded_text"])
    assert "needs 30 GiB per device, has 16 GiB" in texts
    assert "needs the neuron software stack" in texts


def test_region_and_market_filters() -> None:
    offers = offers_frame()
    assert set(allowed_offers(offers, regions=["eu-*"])["region"]) == {"eu-west-1"}
    assert set(allowed_offers(offers, market="on-demand")["market"]) == {"on-demand"}
    assert allowed_offers(offers, clouds=["gcp"]).empty


def test_samples_per_dollar_prefers_cheap_spot() -> None:
    selection = select_candidates(priced(Target(samples=1e9)), question(target_samples=1e9))
    top = selection.ranked.iloc[0]
    # small.gpu spot: 1,000/s at $0.40/h = 9M samples/$, vs big.gpu spot 5,000/s at $3.20/h = 5.6M.
    assert (top["instance_type"], top["market"]) == ("small.gpu", "spot")
    assert top["effective_samples_per_dollar"] < top["samples_per_dollar"]  # spot losses priced in
    assert "Top choice by samples per dollar: 1x small.gpu spot" in selection.explanation


def test_time_objective_picks_the_fastest_within_budget() -> None:
    target = Target(samples=1e9)
    fastest = select_candidates(priced(target), question(objective="time", target_samples=1e9)).ranked.iloc[0]
    assert fastest["instance_type"] == "big.gpu"
    # 1e9 / 5,000 /s = 55.6 h on big.gpu ($3.20/h spot ≈ $178): a $100 budget rules it out.
    budget = Target(samples=1e9, budget_usd=150.0)
    ranked = select_candidates(
        priced(budget), question(objective="time", target_samples=1e9, budget_usd=150.0)
    )
    assert ranked.ranked.iloc[0]["instance_type"] == "small.gpu"
    assert (ranked.ranked["expected_cost_usd"] <= 150.0).all()


def test_cost_objective_respects_the_deadline() -> None:
    # small.gpu needs 277.8 h for 1e9 samples; a 100 h deadline leaves only big.gpu.
    target = Target(samples=1e9, deadline_hours=100.0)
    selection = select_candidates(
        priced(target), question(objective="cost", target_samples=1e9, deadline_hours=100.0)
    )
    assert set(selection.ranked["instance_type"]) == {"big.gpu"}
    assert (selection.ranked["p_meet_deadline"] >= 0.9).all()
    assert any("P(done by" in text for text in selection.excluded["excluded_text"])


def test_weighted_objective_moves_with_the_weights() -> None:
    target = Target(samples=1e9)
    frame = priced(target)
    time_heavy = select_candidates(
        frame, question(objective="weighted", target_samples=1e9, weights="time=10,cost=1")
    )
    cost_heavy = select_candidates(
        frame, question(objective="weighted", target_samples=1e9, weights="time=1,cost=10")
    )
    assert time_heavy.ranked.iloc[0]["instance_type"] == "big.gpu"
    assert cost_heavy.ranked.iloc[0]["instance_type"] == "small.gpu"
    assert parse_weights("time=1,cost=3") == {"time": 0.25, "cost": 0.75}
    with pytest.raises(PerdollarError):
        parse_weights("speed=1")


def test_near_ties_on_the_same_chip_and_across_bands() -> None:
    offers = offers_frame()
    twin = offers.iloc[[2]].assign(region="us-west-2", price_per_hour=offers.iloc[2]["price_per_hour"] * 1.01)
    twin = twin.assign(instance_type="small.gpu")
    frame = price_candidates(pd.concat([offers, twin]), predictions_frame(), Target(), SpotAssumptions())
    # Same shape in two regions collapses to its best region; a 1% dearer twin is not shown twice.
    selection = select_candidates(frame, question())
    shapes = selection.ranked[["instance_type", "market", "nodes"]].value_counts()
    assert shapes.max() == 1


def test_nothing_fits_says_how_much_memory() -> None:
    frame = priced(Target())
    frame = frame.assign(reason=np.where(frame["reason"] == cand.OK, cand.REASON_FIT, frame["reason"]))
    with pytest.raises(NothingFeasibleError, match=r"fits nowhere: it needs 30\.0 GiB per device.*24 GiB"):
        select_candidates(frame, question(), memory_needed_gib=30.0)


def test_deadline_nobody_meets_names_the_gap() -> None:
    target = Target(samples=1e9, deadline_hours=10.0)
    with pytest.raises(
        NothingFeasibleError, match=r"no candidate finishes by 10\.0 h.*(too short|longer)"
    ) as error:
        select_candidates(priced(target), question(target_samples=1e9, deadline_hours=10.0))
    assert error.value.exit_code == 3
    assert "--deadline" in (error.value.fix or "")


def test_budget_too_small_names_the_gap() -> None:
    target = Target(samples=1e9, budget_usd=10.0)
    with pytest.raises(NothingFeasibleError, match=r"budget of \$10\.00 is too small.*over") as error:
        select_candidates(priced(target), question(target_samples=1e9, budget_usd=10.0))
    assert "--budget" in (error.value.fix or "")


def test_recommendation_indices_point_at_feasible_estimates() -> None:
    q = question(target_samples=1e9)
    selection = select_candidates(priced(Target(samples=1e9)), q)
    recommendation = build_recommendation(
        q, selection, catalog_captured_at="2026-01-01", catalog_snapshot_id="x"
    )
    feasible = [e for e in recommendation.estimates if e.feasible]
    assert recommendation.estimates[0] == feasible[0]
    assert all(recommendation.estimates[i].feasible for i in recommendation.pareto)
    assert any(not e.feasible and e.excluded_reason for e in recommendation.estimates)


def _dominated_brute_force(time: np.ndarray, cost: np.ndarray) -> np.ndarray:
    n = len(time)
    dominated = np.zeros(n, dtype=bool)
    for i in range(n):
        for j in range(n):
            if time[j] <= time[i] and cost[j] <= cost[i] and (time[j] < time[i] or cost[j] < cost[i]):
                dominated[i] = True
    return dominated


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 20), st.integers(1, 20)), min_size=1, max_size=40))
def test_pareto_front_is_exactly_the_non_dominated_set(points: list[tuple[int, int]]) -> None:
    time = np.array([p[0] for p in points], dtype=float)
    cost = np.array([p[1] for p in points], dtype=float)
    assert list(pareto_mask(time, cost)) == list(~_dominated_brute_force(time, cost))
    front = pareto_indices(time, cost)
    assert list(time[list(front)]) == sorted(time[list(front)])


def test_pareto_ignores_non_finite_points() -> None:
    assert list(pareto_mask([1.0, np.inf, 2.0], [2.0, 0.5, np.nan])) == [True, False, False]


def test_terminal_table_shows_units_marks_and_the_why() -> None:
    from rich.console import Console

    from perdollar.report.tables import print_recommendation

    q = question(target_samples=1e9, deadline_hours=400.0)
    selection = select_candidates(priced(Target(samples=1e9, deadline_hours=400.0)), q)
    recommendation = build_recommendation(
        q, selection, catalog_captured_at="2026-01-01", catalog_snapshot_id="x", notes=("spot: test note",)
    )
    console = Console(record=True, width=250)
    print_recommendation(console, recommendation, top=5, show_excluded=True, unit="images")
    text = console.export_text()
    assert "images/s" in text and "(band) basis" in text and "$/h" in text and "P(≤16.7 d)" in text
    assert "1x small.gpu spot" in text and "aws us-east-1" in text
    assert "small.gpu" in text and "1*" in text
    assert "Excluded (near-misses first)" in text and "needs the neuron software stack" in text
    assert "Top choice by samples per dollar" in text
    assert f"ranked on prices captured {recommendation.price_dates}" in text


def test_foreign_software_stacks_are_excluded_with_the_stack_named() -> None:
    predictions = predictions_frame().assign(excluded_reason="")  # a predictor that flags nothing
    frame = price_candidates(
        offers_frame(),
        predictions,
        Target(),
        SpotAssumptions(),
        stacks={"Trainium": "neuron", "A10G": "cuda", "H100": "cuda"},
    )
    trainium = frame.loc[frame["instance_type"] == "trn.chip"]
    assert set(trainium["reason"]) == {cand.REASON_STACK}
    assert trainium["excluded_reason"].str.contains("AWS Neuron").all()
    assert set(frame.loc[frame["instance_type"] == "big.gpu", "reason"]) == {cand.OK}


def test_bound_sentences_name_the_limit_and_the_lift() -> None:
    from perdollar.select.explain import bound_sentence

    base = {
        "samples_per_second": 1000.0,
        "nodes": 4,
        "network_gbps": 25.0,
        "vcpus": 8.0,
        "accelerator_key": "A10G",
    }
    communication = pd.Series(
        {
            **base,
            "bottleneck": "communication",
            "step_time_s": 0.2,
            "compute_time_s": 0.13,
            "communication_time_s": 0.07,
        }
    )
    assert "all-reduce is 35% of the step over 25 Gbps between 4 nodes" in bound_sentence(
        communication, "images"
    )
    # Input-bound: the accelerators could do a step in 0.1 s but the host feeds one per 0.13 s.
    starved = pd.Series(
        {
            **base,
            "bottleneck": "input-pipeline",
            "step_time_s": 0.13,
            "compute_time_s": 0.1,
            "communication_time_s": 0.0,
        }
    )
    sentence = bound_sentence(starved, "images")
    assert "8-vCPU host's input pipeline" in sentence and "1,300 images/s, 30% more" in sentence
    compute = pd.Series(
        {
            **base,
            "bottleneck": "compute",
            "step_time_s": 0.1,
            "compute_time_s": 0.1,
            "communication_time_s": 0.0,
        }
    )
    assert "A10G compute" in bound_sentence(compute, "images")


def test_a_measurement_on_a_catalog_instance_overrides_the_prediction() -> None:
    from types import SimpleNamespace

    from perdollar.measure.result import HostFingerprint, Measurement, Rate
    from perdollar.predict.measured import apply_measured

    host = HostFingerprint(
        cpu_model="x",
        cpu_cores=8,
        memory_gib=32,
        accelerator="NVIDIA A10G",
        accelerator_key="A10G",
        accelerator_count=1,
        driver=None,
        instance_type="small.gpu",
        cloud="aws",
    )
    measured = Measurement(
        status="ok",
        mode="cached-input",
        workload_name="toy",
        workload_fingerprint="f",
        batch_size=32,
        precision="fp32",
        host=host,
        started_at="2026-01-01T00:00:00Z",
        samples_per_second=Rate(median=1234.0, low=1200.0, high=1260.0),
    )
    profile = SimpleNamespace(workload_fingerprint="f", workload_name="toy", batch_size=32, precision="fp32")
    frame = apply_measured(predictions_frame((1, 2)), profile, [measured])
    row = frame.loc[(frame["instance_type"] == "small.gpu") & (frame["nodes"] == 1)].iloc[0]
    assert (row["samples_per_second"], row["basis"]) == (1234.0, "measured")
    untouched = frame.loc[(frame["instance_type"] == "small.gpu") & (frame["nodes"] == 2)].iloc[0]
    assert untouched["basis"] == "spec"
    other = apply_measured(
        predictions_frame(),
        SimpleNamespace(**{**vars(profile), "workload_fingerprint": "g", "workload_name": "other"}),
        [measured],
    )
    assert set(other["basis"]) == {"spec"}
