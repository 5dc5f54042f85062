"""Language-model training figures carry bands from the held-out error of training runs like them."""

from __future__ import annotations

import json
import math

from cli_runner import run_perdollar
from perdollar.predict.held_out_bands import UNVALIDATED, FigureRow, band_for
from perdollar.predict.llm.training_bands import FIGURE, band_table, stored_table, training_band

DENSE_H100 = (
    "predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--global-batch", "64", "--seq-len", "2048",
)  # fmt: skip


def _predict(*args: str) -> dict:
    completed = run_perdollar(*args, "--json", "--no-store", columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_predict_json_carries_the_band_and_the_held_out_group_that_set_it() -> None:
    answer = _predict(*DENSE_H100)
    band = answer["band"]
    group = stored_table()["groups"][band["group"]]
    assert band["group"].startswith(f"{FIGURE} · dense · cuda") and band["validated"]
    assert band["rows"] == group["rows"] >= 8
    tokens = answer["tokens_per_second"]
    assert math.isclose(band["low"], tokens * group["low"])
    assert math.isclose(band["high"], tokens * group["high"])
    assert answer["tokens_per_second_low"] == band["low"] and answer["tokens_per_second_high"] == band["high"]


def test_the_text_answer_names_the_group_of_its_band() -> None:
    completed = run_perdollar(*DENSE_H100, "--no-store", columns=300)
    assert completed.returncode == 0, completed.stderr[-2000:]
    line = next(line for line in completed.stdout.splitlines() if line.startswith("throughput:"))
    assert f"80% band from held-out runs: {FIGURE} · dense · cuda" in line


def test_recommend_gives_each_training_row_its_band_group_in_the_json_and_under_the_table() -> None:
    completed = run_perdollar(
        "recommend", "llama-3.1-8b", "--tokens", "2e10", "--top", "4", "--json", "--no-store", columns=200
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    feasible = [e for e in json.loads(completed.stdout)["estimates"] if not e["excluded_reason"]][:4]
    groups = stored_table()["groups"]
    for estimate in feasible:
        group = groups[estimate["band_group"]]
        assert estimate["band_rows"] == group["rows"]
        rate = estimate["samples_per_second"]
        assert math.isclose(estimate["samples_per_second_low"], rate * group["low"])
        assert f"80% band from {group['rows']} held-out runs: {estimate['band_group']}" in estimate["remarks"]
    # TPU and Trainium rows are banded by their own stacks' held-out runs, not a fixed ±30%.
    assert any(" · xla · " in e["band_group"] or " · neuron · " in e["band_group"] for e in feasible)


def test_a_mixture_of_experts_takes_the_wider_band_of_held_out_moe_runs() -> None:
    dense = training_band(moe=False, stack="cuda", framework="megatron", family="Hopper")
    moe = training_band(moe=True, stack="cuda", framework="megatron", family="Hopper")
    assert " · MoE · cuda" in moe.group and " · dense · cuda" in dense.group
    assert moe.validated and dense.validated
    assert moe.high / moe.low > dense.high / dense.low


def test_a_compiled_framework_is_banded_with_its_eager_runs() -> None:
    assert training_band(moe=False, stack="cuda", framework="torchtune+compile", family="Ampere") == (
        training_band(moe=False, stack="cuda", framework="torchtune", family="Ampere")
    )


def test_an_unchecked_dense_run_takes_the_widest_dense_band_doubled_not_the_moe_one() -> None:
    dense_row = FigureRow(FIGURE, False, "cuda", "megatron", "Hopper")
    moe_row = FigureRow(FIGURE, True, "cuda", "megatron", "Hopper")
    rows = [(dense_row, f"dense {i % 3}", 0.02 * (i % 5 - 2)) for i in range(20)]
    rows += [(moe_row, f"moe {i % 3}", math.log(3.0) * (i % 3 - 1)) for i in range(12)]
    table = band_table(rows)
    gaudi_dense = band_for(table, FigureRow(FIGURE, False, "habana", "optimum-habana", "Gaudi 2"))
    gaudi_moe = band_for(table, FigureRow(FIGURE, True, "habana", "optimum-habana", "Gaudi 2"))
    assert gaudi_dense.group == gaudi_moe.group == UNVALIDATED
    # The dense runs err by 4% at most: doubled, still under the floor of half to twice.
    assert math.isclose(gaudi_dense.low, 0.5) and math.isclose(gaudi_dense.high, 2.0)
    assert gaudi_moe.low < 1 / 3 and gaudi_moe.high > 3.0
