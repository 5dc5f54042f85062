"""The decision rules of the selection-accuracy benchmark, on hand-made GPU tables."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "selection_accuracy.py"
_spec = importlib.util.spec_from_file_location("selection_accuracy", _PATH)
assert _spec and _spec.loader
sa = importlib.util.module_from_spec(_spec)
sys.modules["selection_accuracy"] = sa  # dataclasses resolve their module by name
_spec.loader.exec_module(sa)

# Three GPUs: a cheap slow one, a mid one, a fast expensive one (samples/s, $ per GPU-hour).
RATES = {"T4": 100.0, "A100": 600.0, "H100": 1000.0}
PRICES = {"T4": 0.5, "A100": 2.5, "H100": 7.0}
# samples/$: T4 720 000, A100 864 000, H100 514 286; deadline needs ≥ 500 samples/s.
PEAKS = {"T4": 65.0, "A100": 312.0, "H100": 990.0}


def test_best_value_is_samples_per_dollar_not_price_per_hour() -> None:
    assert sa.pick_best_value(RATES, PRICES) == "A100"
    assert sa.pick_cheapest_per_hour(PRICES) == "T4"
    assert sa.pick_fastest_on_paper(PEAKS) == "H100"


def test_cheapest_meeting_is_lowest_cost_to_target_among_fast_enough() -> None:
    assert sa.pick_cheapest_meeting(RATES, PRICES, 500.0) == "A100"
    assert sa.pick_cheapest_meeting(RATES, PRICES, 800.0) == "H100"
    assert sa.pick_cheapest_meeting(RATES, PRICES, 2000.0) is None


def test_deadline_pick_needs_the_low_end_of_the_band() -> None:
    predicted = {"T4": 100.0, "A100": 560.0, "H100": 1000.0}
    low = {k: v * 0.8 for k, v in predicted.items()}  # A100's low end 448 < 500: not confident
    assert sa.pick_for_deadline(predicted, predicted, PRICES, 500.0) == "A100"
    assert sa.pick_for_deadline(predicted, low, PRICES, 500.0) == "H100"
    # Nobody is confidently fast enough: the best chance (highest low end) is taken.
    assert sa.pick_for_deadline(predicted, low, PRICES, 5000.0) == "H100"


def test_score_against_the_measured_truth() -> None:
    skypilot = sa.score(RATES, PRICES, "T4", "T4")
    assert not skypilot.value_right
    assert skypilot.value_loss == pytest.approx(1 - 720_000 / 864_000)
    assert not skypilot.deadline_met and not skypilot.deadline_right
    assert skypilot.cost_excess == pytest.approx(864_000 / 720_000 - 1)  # late and dearer

    cheap_but_late = sa.score({**RATES, "T4": 300.0}, PRICES, "T4", "T4")
    assert cheap_but_late.value_right and not cheap_but_late.deadline_met
    assert cheap_but_late.cost_excess < 0  # T4 is the best value, but misses the deadline

    paper = sa.score(RATES, PRICES, "H100", "H100")
    assert paper.deadline_met and not paper.deadline_right
    assert paper.cost_excess == pytest.approx(864_000 / 514_285.714 - 1, rel=1e-6)

    right = sa.score(RATES, PRICES, "A100", "A100")
    assert right.value_right and right.deadline_right
    assert right.value_loss == 0.0 and right.cost_excess == 0.0


def test_summary_shares_and_means() -> None:
    outcomes = [sa.score(RATES, PRICES, "T4", "T4"), sa.score(RATES, PRICES, "A100", "H100")]
    s = sa.summarise(outcomes)
    assert s["n"] == 2
    assert s["value_right"] == 0.5
    assert s["deadline_met"] == 0.5
    assert s["deadline_right"] == 0.0
    assert s["cost_excess_mean_when_met"] == pytest.approx(864_000 / 514_285.714 - 1, rel=1e-6)
    assert sa.summarise([]) == {"n": 0}


def _config(calibrated: dict[str, dict[str, float]], spec: dict[str, float] | None = None):
    return sa.Configuration(
        label="hand-made",
        rates=RATES,
        prices=PRICES,
        peaks=PEAKS,
        calibrated=calibrated,
        spec=spec or {},
    )


BANDS = sa.Bands(
    measured=sa.Band(math.log(0.95), math.log(1.05)),
    calibrated=sa.Band(math.log(0.8), math.log(1.25)),
    spec=sa.Band(math.log(0.6), math.log(1.6)),
)


def test_calibrated_decision_uses_the_anchor_measurement_and_the_band() -> None:
    # From the T4, the model predicts the A100 10% slow and the H100 right.
    config = _config({"T4": {"A100": 540.0, "H100": 1000.0}})
    est = sa.anchored(config, "T4", BANDS)
    assert est.predicted == {"A100": 540.0, "H100": 1000.0, "T4": 100.0}
    assert est.low["T4"] == pytest.approx(95.0) and est.low["A100"] == pytest.approx(432.0)
    value, deadline = sa.decide(est, PRICES, 500.0)
    assert value == "A100"
    assert deadline == "H100"  # 540 × 0.8 < 500: not sure enough that the A100 makes it
    assert sa.decide(est, PRICES, 500.0, use_band=False) == ("A100", "A100")


def test_a_model_without_a_traced_workload_gets_the_fallback_band() -> None:
    bands = dataclasses.replace(BANDS, calibrated_fallback=sa.Band(math.log(0.5), math.log(2.0)))
    untraced = _config({"T4": {"A100": 540.0, "H100": 1000.0}})
    traced = _config({"T4": {"A100": 540.0, "H100": 1000.0}}, spec={"T4": 90.0, "A100": 500.0, "H100": 900.0})
    assert sa.anchored(untraced, "T4", bands).low["A100"] == pytest.approx(270.0)
    assert sa.anchored(traced, "T4", bands).low["A100"] == pytest.approx(432.0)
    assert sa.anchored(untraced, "T4", BANDS).low["A100"] == pytest.approx(432.0)  # none shipped


def test_sweep_measures_only_when_the_band_leaves_the_answer_open() -> None:
    config = _config({"T4": {"A100": 540.0, "H100": 1000.0}})
    benchmarked: list[str] = []

    def measure(key: str) -> float:
        benchmarked.append(key)
        return RATES[key]

    value, deadline, extra = sa.decide_with_sweep(
        sa.anchored(config, "T4", BANDS), PRICES, 500.0, measure, ["T4"]
    )
    # A100 (predicted best value) and the T4 anchor are close: the A100 is benchmarked once and
    # then both questions are answered with its measurement (600 ≥ 500).
    assert (value, deadline, extra) == ("A100", "A100", 1)
    assert benchmarked == ["A100"]

    far_apart = {"T4": 10.0, "A100": 600.0, "H100": 1000.0}
    est = sa.estimates(far_apart, BANDS.calibrated, {}, BANDS.measured)
    value, deadline, extra = sa.decide_with_sweep(est, PRICES, 300.0, measure, [])
    assert (value, deadline, extra) == ("A100", "A100", 0)  # clear on both questions: nothing run
    assert benchmarked == ["A100"]


def test_policies_on_a_table_where_only_prediction_gets_both_right() -> None:
    exact = {a: {t: r for t, r in RATES.items() if t != a} for a in RATES}
    config = _config(exact, spec={k: v * 1.1 for k, v in RATES.items()})
    result = sa.evaluate([config], BANDS)["all"]
    assert result["SkyPilot default (cheapest $/h)"]["deadline_met"] == 0.0
    assert result["fastest on paper (peak TFLOPS)"]["deadline_met"] == 1.0
    assert result["fastest on paper (peak TFLOPS)"]["cost_excess_mean"] > 0.6
    every = result["perdollar calibrated, every anchor"]
    assert every["n"] == 3
    assert every["value_right"] == 1.0
    # With exact predictions the A100 (600 vs 500 needed) clears the ×0.8 band only when measured.
    assert every["deadline_met"] == 1.0
    assert every["deadline_right"] == pytest.approx(1 / 3)
    assert result["perdollar spec-only (no anchor)"]["n"] == 1


def test_gpu_hour_price_rule_uses_unflagged_on_demand_whole_gpus() -> None:
    offers = pd.DataFrame(
        [
            # cloud offers of one accelerator: the 8-GPU machine is cheapest per GPU
            ("on-demand", (), 8.0, "A100", 20.0),
            ("on-demand", (), 1.0, "A100", 3.0),
            ("spot", (), 1.0, "A100", 1.0),  # spot: not the on-demand price
            ("on-demand", ("price-suspect",), 1.0, "A100", 0.5),  # flagged: left out
            ("on-demand", (), 0.5, "A100", 0.8),  # a fraction of a GPU: not the same chip speed
            ("on-demand", (), 0.0, None, 0.1),  # CPU instance
            ("on-demand", (), 1.0, "T4", 0.6),
        ],
        columns=["market", "flags", "accelerator_count", "accelerator_key", "price_per_hour"],
    )
    assert sa.gpu_hour_prices(offers, "cheapest") == {"A100": 2.5, "T4": 0.6}
    assert sa.gpu_hour_prices(offers, "median") == {"A100": 2.75, "T4": 0.6}


def test_paper_peak_follows_the_precision() -> None:
    class Chip:
        peak_fp32_tflops = 19.5

        def peak_tflops(self, dtype: str) -> float | None:
            return {"fp32": 19.5, "tf32": 156.0, "fp16": 312.0}.get(dtype)

    assert sa.paper_peak(Chip(), "amp") == 312.0
    assert sa.paper_peak(Chip(), "tf32") == 156.0
    assert sa.paper_peak(Chip(), "fp32") == 19.5
    assert sa.paper_peak(Chip(), "fp8") == 312.0  # no fp8 units: falls back to fp16
