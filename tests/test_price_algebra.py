"""Cost and spot algebra against hand-computed cases and a seeded simulation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from perdollar.price import cost, spot
from perdollar.price.frame import SpotAssumptions, Target, monthly_fraction_from_text, price_frame


def test_samples_per_dollar_uses_price_of_all_nodes() -> None:
    # 1,000 samples/s on 4 nodes at $1.50/h each: $6/h → 3.6M samples per hour → 600k samples/$.
    price = cost.total_price_per_hour(1.5, 4)
    assert price == pytest.approx(6.0)
    assert cost.samples_per_dollar(1000.0, price) == pytest.approx(600_000.0)
    assert cost.samples_per_dollar(0.0, price) == 0.0


def test_time_and_cost_to_target() -> None:
    # 1e9 samples at 2,000 samples/s = 500,000 s = 138.9 h; at $4/h = $555.6.
    hours = cost.hours_to_target(1e9, 2000.0)
    assert hours == pytest.approx(1e9 / 2000 / 3600)
    assert cost.cost_of_hours(hours, 4.0) == pytest.approx(hours * 4.0)
    assert cost.target_from_epochs(3, 1_281_167) == 3 * 1_281_167
    assert math.isinf(cost.hours_to_target(1e9, 0.0))


def test_bucket_to_hourly_hazard() -> None:
    # A monthly fraction f is an exponential clock with rate −ln(1 − f)/730 per hour.
    hazard = spot.monthly_fraction_to_hazard(0.1)
    assert hazard == pytest.approx(-math.log(0.9) / 730.0)
    assert 1 - math.exp(-hazard * 730.0) == pytest.approx(0.1)
    central, low, high = spot.bucket_fractions(np.array(["<5%", ">20%", None], dtype=object))
    assert list(central) == [0.025, 0.30, spot.UNKNOWN_MONTHLY_FRACTION[0]]
    assert low[0] < central[0] < high[0]


def test_young_daly_interval_hand_computed() -> None:
    # C = 36 s = 0.01 h, MTBF = 50 h → τ = √(2 · 0.01 · 50) = 1 h.
    assert spot.young_daly_interval_hours(0.01, 50.0) == pytest.approx(1.0)


def test_n_nodes_multiply_the_hazard_and_shorten_the_interval() -> None:
    hazard = 0.005  # per node-hour
    one = spot.spot_outcome(100.0, hazard, 1, 0.01, 0.2)
    four = spot.spot_outcome(100.0, hazard, 4, 0.01, 0.2)
    assert four.job_hazard_per_hour == pytest.approx(4 * hazard)
    # MTBF 200 h on one node, 50 h on four: τ = √(2·0.01·200) = 2 h and √(2·0.01·50) = 1 h.
    assert one.interval_hours == pytest.approx(2.0)
    assert four.interval_hours == pytest.approx(1.0)
    assert four.expected_hours > one.expected_hours > 100.0


def test_expected_time_matches_the_restartable_work_formula() -> None:
    # Hand-computed: Λ = 0.02/h, C = 0.01 h, R = 0.2 h → τ = √(2·0.01·50) = 1 h; a segment of
    # 1.01 h takes (1/Λ + R)(e^{Λ·1.01} − 1) = 50.2 · (e^{0.0202} − 1) = 1.024448 h; 100 of them.
    outcome = spot.spot_outcome(100.0, 0.02, 1, 0.01, 0.2)
    segment = (1 / 0.02 + 0.2) * math.expm1(0.02 * 1.01)
    assert outcome.expected_hours == pytest.approx(100 * segment)
    assert outcome.expected_hours == pytest.approx(102.4448, rel=1e-4)
    assert outcome.overhead == pytest.approx(segment / 1.0)


def test_no_hazard_means_no_overhead() -> None:
    outcome = spot.spot_outcome(10.0, 0.0, 8, 0.01, 0.2)
    assert outcome.expected_hours == pytest.approx(10.0)
    assert outcome.sd_hours == 0.0
    assert outcome.overhead == 1.0


def test_short_job_writes_no_intermediate_checkpoint() -> None:
    # τ = √(2 · 0.01 · 1000) ≈ 4.5 h > 2 h of work: one segment of 2 h, no checkpoint time.
    outcome = spot.spot_outcome(2.0, 0.001, 1, 0.01, 0.2)
    assert outcome.base_hours == pytest.approx(2.0)
    assert outcome.expected_hours == pytest.approx((1 / 0.001 + 0.2) * math.expm1(0.002))


@pytest.mark.parametrize(
    ("work", "nodes", "deadline"), [(100.0, 4, 101.0), (30.0, 1, 30.5), (1000.0, 8, 1010.0)]
)
def test_closed_form_agrees_with_seeded_simulation(work: float, nodes: int, deadline: float) -> None:
    hazard = spot.monthly_fraction_to_hazard(0.30)
    outcome = spot.spot_outcome(work, hazard, nodes, 0.01, 0.2)
    simulated = spot.simulate_completion_hours(work, float(hazard), nodes, 0.01, 0.2, draws=20000, seed=7)
    assert outcome.expected_hours == pytest.approx(simulated.mean(), rel=2e-3)
    assert outcome.sd_hours == pytest.approx(simulated.std(), rel=0.1)
    assert spot.deadline_probability(outcome, deadline) == pytest.approx(
        (simulated <= deadline).mean(), abs=0.02
    )


def test_deadline_probability_on_demand_uses_the_throughput_band() -> None:
    outcome = spot.spot_outcome(np.array([10.0, 10.0]), 0.0, 1, 0.01, 0.2)
    certain = spot.deadline_probability(outcome, 11.0, 0.0)
    assert list(certain) == [1.0, 1.0]
    # log sd 0.1: P(10·e^{0.1 Z} ≤ 11) = Φ(ln 1.1 / 0.1) = Φ(0.953) ≈ 0.830.
    uncertain = spot.deadline_probability(outcome, 11.0, 0.1)
    assert uncertain[0] == pytest.approx(0.8297, abs=1e-3)


def _frame(market: str, bucket: str | None) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "market": [market],
            "nodes": [2],
            "price_per_node_hour": [1.0],
            "interruption_bucket": [bucket],
            "samples_per_second": [1000.0],
            "samples_per_second_low": [900.0],
            "samples_per_second_high": [1100.0],
        }
    )


def test_price_frame_on_demand_and_spot() -> None:
    target = Target(samples=3.6e7, deadline_hours=20.0)
    assumptions = SpotAssumptions(checkpoint_hours=0.01, restart_hours=0.2)
    on_demand = price_frame(_frame("on-demand", "<5%"), target, assumptions).iloc[0]
    # 3.6e7 samples at 1,000/s = 10 h; 2 nodes × $1 = $2/h → $20; 1.8M samples per dollar.
    assert on_demand["price_per_hour"] == 2.0
    assert on_demand["time_to_target_hours"] == pytest.approx(10.0)
    assert on_demand["cost_to_target_usd"] == pytest.approx(20.0)
    assert on_demand["expected_cost_usd"] == pytest.approx(20.0)
    assert on_demand["samples_per_dollar"] == pytest.approx(1.8e6)
    assert on_demand["p_meet_deadline"] == pytest.approx(1.0, abs=1e-6)

    spot_row = price_frame(_frame("spot", ">20%"), target, assumptions).iloc[0]
    hazard = spot.monthly_fraction_to_hazard(0.30)
    expected = spot.spot_outcome(10.0, hazard, 2, 0.01, 0.2).expected_hours
    assert spot_row["interruptions_per_hour"] == pytest.approx(2 * hazard)
    assert spot_row["expected_time_hours"] == pytest.approx(float(expected))
    assert spot_row["expected_cost_usd"] == pytest.approx(float(expected) * 2.0)
    assert spot_row["effective_samples_per_dollar"] < spot_row["samples_per_dollar"]


def test_interruption_override_replaces_the_bucket() -> None:
    target = Target(samples=3.6e7)
    quiet = price_frame(_frame("spot", ">20%"), target, SpotAssumptions(interruption_fraction=0.01)).iloc[0]
    assert quiet["interruptions_per_hour"] == pytest.approx(2 * spot.monthly_fraction_to_hazard(0.01))
    assert monthly_fraction_from_text("15%") == pytest.approx(0.15)
    assert monthly_fraction_from_text("0.2/month") == pytest.approx(0.2)
    with pytest.raises(ValueError):
        monthly_fraction_from_text("150%")


def test_a_job_far_beyond_the_deadline_has_no_chance_even_with_a_wide_band() -> None:
    hazard = spot.monthly_fraction_to_hazard(0.025)
    outcome = spot.spot_outcome(np.array([3600.0, 20.0]), hazard, 4, 0.0025, 0.17)
    probability = spot.deadline_probability(outcome, 24.0, 0.39)
    assert probability[0] < 1e-6  # 150 days of work cannot finish in a day
    assert 0.5 < probability[1] < 1.0  # 20 h of work: likely, not certain
