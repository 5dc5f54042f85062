"""Serving figures carry bands from the held-out error of predictions like them."""

from __future__ import annotations

import json
import math

import pytest

from cli_runner import run_perdollar
from perdollar.predict.llm_serving.bands import (
    MIN_ROWS,
    MIN_SOURCES,
    UNVALIDATED,
    FigureRow,
    band_for,
    band_table,
    serving_band,
    stored_table,
)
from perdollar.predict.llm_serving.engines import ENGINES

VLLM_H100 = FigureRow("tpot", False, "cuda", "vllm", "Hopper")


def _rows(row: FigureRow, errors: list[float], sources: int) -> list[tuple[FigureRow, str, float]]:
    return [(row, f"source {i % sources}", error) for i, error in enumerate(errors)]


def test_a_group_with_enough_rows_and_sources_sets_the_band_from_its_held_out_quantiles() -> None:
    # Predictions 0-45% too slow (times too long): the published figure lies below the prediction.
    errors = [math.log(1 + 0.05 * i) for i in range(10)]
    table = band_table(_rows(VLLM_H100, errors, sources=MIN_SOURCES))
    band = band_for(table, VLLM_H100)
    assert band.group == "tpot · dense · cuda · vllm · Hopper" and band.rows == 10
    # Ten rows put the 5th and 95th percentiles at (a little beyond) the extreme rows: published
    # figures 1/1.45 to 1 times the prediction, so the band sits below it, as the errors do.
    assert 1 / 1.45 / 1.1 < band.low <= 1 / 1.45 and 1.0 <= band.high < 1.1
    assert band.around(10.0) == (10.0 * band.low, 10.0 * band.high)


def test_a_group_of_too_few_rows_or_sources_falls_back_to_its_parent() -> None:
    hopper = _rows(VLLM_H100, [0.0] * (MIN_ROWS - 1), sources=MIN_SOURCES)
    ampere_row = FigureRow("tpot", False, "cuda", "vllm", "Ampere")
    ampere = _rows(ampere_row, [math.log(2.0)] * MIN_ROWS, sources=MIN_SOURCES - 1)
    table = band_table(hopper + ampere)
    assert band_for(table, VLLM_H100).group == "tpot · dense · cuda · vllm"
    assert band_for(table, ampere_row).group == "tpot · dense · cuda · vllm"
    assert band_for(table, ampere_row).rows == 2 * MIN_ROWS - 1


def test_an_engine_that_disagrees_with_the_rest_of_its_stack_widens_the_stack_band_either_way() -> None:
    # One engine's 30 rows from three sources are right; another's three rows (too few for a band
    # of their own) put the published time at half the prediction. Both take the stack's band.
    # The rows' own spread reaches the half but not its mirror; a setup none of them ran may be an
    # engine that errs the other way as far, so the band must reach both.
    right_row = FigureRow("tpot", False, "cuda", "tensorrt-llm", "Hopper")
    right = [(right_row, f"table {i % 3}", 0.01 * (i % 3 - 1)) for i in range(30)]
    other_row = FigureRow("tpot", False, "cuda", "sglang", "Hopper")
    other = [(other_row, f"blog {i}", math.log(2.0)) for i in range(3)]
    band = band_for(band_table(right + other), other_row)
    assert band.group == "tpot · dense · cuda" and band.rows == 33
    assert band.low <= 0.5 * (1 + 1e-9) and band.high >= 2.0


def test_a_predictions_band_and_group_are_read_from_the_bundled_table() -> None:
    band = serving_band("tpot", moe=False, stack="cuda", engine="vllm@2024", family="Hopper")
    group = stored_table()["groups"][band.group]
    assert band.group.startswith("tpot · dense · cuda") and band.validated
    assert (band.low, band.high, band.rows) == (group["low"], group["high"], group["rows"])


def test_a_prediction_no_held_out_row_is_like_is_unvalidated_and_wider_than_any_checked_band() -> None:
    table = band_table(_rows(VLLM_H100, [math.log(1 + 0.04 * i) - 0.2 for i in range(12)], sources=4))
    checked = band_for(table, VLLM_H100)
    unchecked = band_for(table, FigureRow("tpot", True, "cuda", "vllm", "Hopper"))  # MoE: no row
    gaudi = band_for(table, FigureRow("tpot", False, "gaudi", "vllm-gaudi", "Gaudi 2"))
    assert unchecked.group == gaudi.group == UNVALIDATED and not unchecked.validated
    assert unchecked.low <= min(checked.low, 0.5) and unchecked.high >= max(checked.high, 2.0)


def test_the_bundled_table_names_its_rows_date_and_command() -> None:
    table = stored_table()
    assert table["computed"] and "benchmarks/llm_serving_bands.py" in table["command"]
    assert all(g["rows"] >= MIN_ROWS and g["sources"] >= MIN_SOURCES for g in table["groups"].values())
    assert {"throughput", "ttft", "tpot"} <= set(table["unvalidated"])


PREDICT = ("predict", "--inference", "--input-tokens", "1000", "--output-tokens", "300", "--json")


def _predict(model: str, *args: str) -> dict:
    completed = run_perdollar(*PREDICT[:1], model, *PREDICT[1:], *args, columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


@pytest.mark.parametrize("model", ["llama-3.1-8b", "qwen3-30b-a3b"])
def test_predict_inference_gives_throughput_ttft_and_tpot_each_a_band_and_its_group(model: str) -> None:
    answer = _predict(model, "--accelerator", "H100", "--gpus", "1", "--engine", "vllm")
    bands = answer["bands"]
    assert set(bands) == {"throughput", "ttft", "tpot"}
    for name, value in (("throughput", answer["output_tokens_per_second"]), ("ttft", answer["ttft_ms"]),
                        ("tpot", answer["tpot_ms"])):  # fmt: skip
        band = bands[name]
        assert band["low"] < value < band["high"] and band["level"] == 0.8 and band["group"]
        assert band["validated"] == (band["group"] != UNVALIDATED)
    assert answer["engine_build"] == f"vllm {ENGINES['vllm'].version}"
    years = [build["year"] for build in answer["engine_builds_held_out"]]
    assert years == sorted(years) and len(years) >= 2  # vLLM's dated builds behind the bands
    assert all(build["rows"] > 0 and build["speed"] > 0 for build in answer["engine_builds_held_out"])
    assert answer["band"]["low"] == bands["throughput"]["low"]
    assert answer["band"]["group"] == bands["throughput"]["group"]
    if model == "qwen3-30b-a3b":  # a mixture of experts is banded by mixture-of-experts rows only
        assert all(" MoE " in b["group"] or b["group"] == UNVALIDATED for b in bands.values())
    else:
        assert all(" dense " in b["group"] for b in bands.values())


def test_the_text_answer_says_where_each_band_comes_from() -> None:
    completed = run_perdollar(
        "predict", "llama-3.1-8b", *PREDICT[1:-1], "--accelerator", "H100", "--gpus", "1", columns=300
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "80% bands from held-out errors: throughput · dense · cuda" in completed.stdout
    assert "TTFT" in completed.stdout and "…" in completed.stdout.split("latency:")[1].splitlines()[0]
    assert f"the figures assume vllm {ENGINES['vllm'].version}; held out, vllm ran at " in completed.stdout


def test_recommend_inference_bands_each_deployment_and_ties_those_within_the_top_ones_band() -> None:
    completed = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "1000", "--top", "60", "--json", "--no-store", columns=200,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    answer = json.loads(completed.stdout)
    rows = answer["deployments"]
    top = rows[0]
    for row in rows:
        band = row["band"]
        cost = band["usd_per_million_output_tokens"]
        assert cost["low"] < row["usd_per_million_output_tokens"] < cost["high"] and band["group"]
        assert band["ttft_p99_ms"]["low"] < row["ttft_p99_ms"] < band["ttft_p99_ms"]["high"]
    top_high = top["band"]["usd_per_million_output_tokens"]["high"]
    elsewhere = [
        r for r in rows[1:] if (r["accelerator_key"], r["engine"]) != (top["accelerator_key"], top["engine"])
    ]
    overlapping = [r for r in elsewhere if r["band"]["usd_per_million_output_tokens"]["low"] <= top_high]
    apart = [r for r in elsewhere if r["band"]["usd_per_million_output_tokens"]["low"] > top_high]
    assert overlapping and all(r["ties_with_top"] for r in overlapping)
    assert not any(r["ties_with_top"] for r in apart) and not top["ties_with_top"]
    assert "tie with it within the 80% bands of cost per output token" in answer["explanation"]
    assert any(note.startswith(f"the figures assume {top['engine']} ") for note in answer["notes"])
