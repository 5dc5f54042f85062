"""A spot offer is ranked at its typical zone's price, and its cost band holds its zones and age."""

from __future__ import annotations

import math

import numpy as np

from perdollar import catalog
from perdollar.price.spot_prices import SPOT_DRIFT_LOG80, drift_factor, price_band


def test_a_spot_offer_read_over_zones_ranks_at_their_mean_and_keeps_the_lowest_and_highest() -> None:
    bundled = catalog.load()
    spot = [o for o in bundled.offers if o.market == "spot" and o.price_basis.endswith("mean_over_azs")]
    assert spot, "the bundled AWS GPU spot prices were read over zones"
    spread = [o for o in spot if o.price_min_per_hour is not None and o.price_max_per_hour is not None]
    assert all(o.price_min_per_hour <= o.price_per_hour <= o.price_max_per_hour for o in spread)  # type: ignore[operator]
    # where the zones differ, the typical price is above the cheapest zone the old catalog ranked at
    assert sum(o.price_per_hour > o.price_min_per_hour for o in spread) > len(spread) / 2  # type: ignore[operator]


def test_an_old_spot_price_has_a_wider_band_and_on_demand_has_none() -> None:
    market = np.array(["spot", "spot", "on-demand"], dtype=object)
    price = np.array([1.0, 1.0, 3.0])
    lowest, highest = np.array([0.9, 0.9, math.nan]), np.array([1.2, 1.2, math.nan])
    low, high = price_band(market, price, lowest, highest, np.array([0.0, 365.0, 365.0]))
    assert (low[0], high[0]) == (0.9, 1.2)  # read with the rest: its zones only
    assert low[1] < 0.9 and high[1] > 1.2  # a year older than the rest: wider both ways
    assert math.isclose(high[1] / 1.2, math.exp(SPOT_DRIFT_LOG80 * math.sqrt(365 / 170)))
    assert (low[2], high[2]) == (3.0, 3.0)
    assert drift_factor(np.array([0.0]))[0] == 1.0


def test_a_spot_top_choice_says_what_it_may_cost_and_its_cost_band_holds_it() -> None:
    from perdollar.ask.inputs import load_inputs
    from perdollar.ask.network import answer_training
    from perdollar.ask.questions import decided
    from perdollar.goals import TrainingGoal
    from perdollar.question import Question

    goal = TrainingGoal(target_samples=1e9, objective="cost")
    question = decided(Question(workload_name="mlp", clouds=("aws",), market="spot", goal=goal))
    answer = answer_training(question, load_inputs(question))
    top = next(e for e in answer.estimates if e.feasible)
    assert top.price_per_hour_low is not None and top.price_per_hour_high is not None
    assert top.price_per_hour_low < top.price_per_hour < top.price_per_hour_high
    assert "may be $" in answer.explanation and "where the job lands" in answer.explanation
