"""The notebook API: perdollar.recommend / predict / compare at the top level, frames and displays."""

from __future__ import annotations

import os
import subprocess
import sys

import pandas as pd
import pytest

import perdollar
from perdollar.errors import PerdollarError
from perdollar.goals import TrainingGoal
from perdollar.select.display import estimates_html


@pytest.fixture(scope="module")
def recommendation():  # type: ignore[no-untyped-def]
    return perdollar.recommend("mlp", samples=1e9, clouds=["aws"])


def test_the_documented_one_liner_prints_a_data_frame() -> None:
    # A user's script, not the command line: what a fresh interpreter prints for the documented line.
    code = "import perdollar; print(perdollar.recommend('vit-b16', samples=1e9).to_frame().head())"
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    lines = completed.stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["rank", "configuration", "cloud"]
    # pandas folds wide frames into blocks; the first block holds the five best rows, 0 to 4.
    assert [line.split()[0] for line in lines[1:6]] == ["0", "1", "2", "3", "4"]


def test_the_frame_holds_every_estimate_in_ranked_order_with_units(recommendation) -> None:  # type: ignore[no-untyped-def]
    frame = recommendation.to_frame()
    assert isinstance(frame, pd.DataFrame)
    assert list(frame["configuration"]) == [e.label for e in recommendation.estimates]
    feasible = frame[frame["excluded_reason"].isna()]
    assert list(feasible["rank"]) == list(range(1, len(feasible) + 1))
    assert {"samples_per_second", "price_usd_per_hour", "samples_per_usd", "expected_cost_usd"} <= set(frame)
    top = recommendation.estimates[0]
    assert frame.loc[0, "samples_per_second"] == top.samples_per_second
    assert frame.loc[0, "price_usd_per_hour"] == top.price_per_hour


def test_the_displays_are_compact(recommendation) -> None:  # type: ignore[no-untyped-def]
    text = repr(recommendation)
    assert len(text) < 2000 and len(text.splitlines()) <= 6
    assert recommendation.estimates[0].label in text
    page = recommendation._repr_html_()
    assert page.count("<tr>") == 11  # the header and ten rows; the rest stay in the frame
    assert "more rows in .to_frame()" in page


def test_the_html_display_escapes_what_users_named() -> None:
    frame = pd.DataFrame({"configuration": ["<script>alert(1)</script>"], "rank": [1]})
    page = estimates_html(frame, "a & <b>")
    assert "<script>" not in page and "&lt;script&gt;" in page and "a &amp; &lt;b&gt;" in page


def test_compare_at_the_top_level_gives_ratios_in_a_frame() -> None:
    comparison = perdollar.compare("mlp", "4x g5.2xlarge spot", "1x g5.12xlarge on-demand", samples=1e9)
    frame = comparison.to_frame()
    assert list(frame["given_as"]) == ["4x g5.2xlarge spot", "1x g5.12xlarge on-demand"]
    assert frame["best"].sum() == 1
    best = frame[frame["best"]].iloc[0]
    assert best["times_dearer_than_best"] == 1.0
    other = frame[~frame["best"]].iloc[0]
    assert other["times_dearer_than_best"] >= 1.0
    assert "times" in repr(comparison) and "<pre>" in comparison._repr_html_()


def test_predict_at_the_top_level() -> None:
    prediction = perdollar.predict("mlp", "g5.xlarge")
    assert prediction.samples_per_second > 0
    low, high = prediction.samples_per_second_low, prediction.samples_per_second_high
    assert low <= prediction.samples_per_second <= high
    two = perdollar.predict("mlp", "g5.xlarge", nodes=2)
    # Two hosts add the all-reduce over the network that one host never pays.
    assert two.nodes == 2 and two.communication_time_s > prediction.communication_time_s == 0
    with pytest.raises(PerdollarError, match="language model"):
        perdollar.predict("llama-3.1-8b", "p5.48xlarge")


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: perdollar.recommend("mlp", samples=-1), "samples cannot be negative, got -1"),
        (lambda: perdollar.compare("mlp", "1x g5.xlarge", samples=-5), "samples cannot be negative, got -5"),
        (lambda: perdollar.recommend("mlp", samples="lots"), "samples 'lots' is not a count"),
        (lambda: perdollar.recommend("mlp", samples=float("nan")), "samples must be a finite number"),
        (lambda: perdollar.recommend("mlp", samples=1e9, deadline_hours="72x"), "'72x' is not a duration"),
        (lambda: perdollar.compare("mlp", "1x g5.xlarge", deadline_hours=[72]), "is not a duration"),
        (lambda: perdollar.recommend("mlp", samples=1e9, budget_usd=-3), "budget_usd cannot be negative"),
        (lambda: perdollar.recommend("mlp", max_nodes=0), "max_nodes must be a positive integer"),
        (lambda: perdollar.recommend("", samples=1e9), "workload must name something"),
        (lambda: perdollar.predict("mlp", None), "instance must name something, got None"),
        (lambda: perdollar.predict("mlp", "g5.xlarge", nodes=1.5), "nodes must be an integer"),
    ],
)
def test_the_api_refuses_nonsense_in_one_line_as_the_command_line_does(call, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PerdollarError) as refused:
        call()
    assert words in refused.value.one_line() and "\n" not in refused.value.one_line()


def test_the_api_and_the_command_line_refuse_with_the_same_check() -> None:
    from cli_runner import run_perdollar

    for api, cli in (({"confidence": 2}, ("--confidence", "2")), ({"budget_usd": 0}, ("--budget", "0"))):
        with pytest.raises(PerdollarError) as refused:
            perdollar.recommend("mlp", samples=1e9, **api)
        done = run_perdollar("recommend", "mlp", "--samples", "1e9", *cli)
        assert done.returncode == 2
        said = done.stderr.strip().removeprefix("perdollar: error: ")
        assert said.replace("--budget", "budget_usd").replace("--confidence", "confidence").replace(
            "budget_usd 10", "budget_usd=10").replace("confidence 0.9", "confidence=0.9"
        ) == refused.value.one_line()  # fmt: skip


def test_the_api_takes_counts_and_durations_in_the_command_line_words() -> None:
    answer = perdollar.recommend("mlp", samples="250M", deadline_hours="3d", clouds=["aws"])
    goal = answer.question.goal
    assert isinstance(goal, TrainingGoal) and goal.target_samples == 2.5e8 and goal.deadline_hours == 72
