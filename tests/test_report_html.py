"""The report page: every user string escaped, the figures built from the estimates."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from fixtures.store.samples import make_estimate, make_recommendation
from perdollar.report import plots
from perdollar.report.checklist import CheckItem
from perdollar.report.html import render_report, write_report
from perdollar.report.sorting import SORT_SCRIPT

HOSTILE = "<img src=x onerror=alert(2)>"


def _hostile_recommendation():  # type: ignore[no-untyped-def]
    base = make_recommendation(workload=HOSTILE)
    estimates = (
        make_estimate(f"g5.{HOSTILE}", market="spot", price=0.4, accelerator=HOSTILE),
        *base.estimates[1:],
    )
    question = dataclasses.replace(
        base.question,
        goal=dataclasses.replace(base.question.goal, weights=HOSTILE),
        precision=HOSTILE,
        regions=(HOSTILE,),
        clouds=(HOSTILE,),
    )
    return dataclasses.replace(
        base,
        question=question,
        estimates=estimates,
        explanation=HOSTILE,
        notes=(HOSTILE,),
        catalog_snapshot_id=HOSTILE,
    )


def test_every_user_string_is_escaped_in_markup_and_in_figure_json() -> None:
    checklist = (CheckItem("x", HOSTILE, "warn", HOSTILE, HOSTILE),)
    page = render_report(
        _hostile_recommendation(), checklist, plotly_js="/* plotly */", generated_at="2026-06-02"
    )
    assert HOSTILE not in page  # nowhere raw: not in the HTML, not inside <script> JSON
    assert "&lt;img src=x onerror=alert(2)&gt;" in page
    scripts = re.findall(r"<script>(.*?)</script>", page, flags=re.S)
    # plotly, three figures (their JSON uses \u003c), and the table-sorting script, which is fixed text.
    assert len(scripts) == 5 and all("<" not in s for s in scripts[1:])
    assert scripts[-1] == SORT_SCRIPT


def test_scatter_holds_every_feasible_candidate_with_bands_and_the_pareto_front() -> None:
    recommendation = make_recommendation()
    figure = plots.time_cost_scatter(recommendation)
    by_name = {trace["name"]: trace for trace in figure["data"]}
    assert (
        len(by_name["spot"]["x"]) == 2 and len(by_name["on-demand"]["x"]) == 2
    )  # the excluded T4 is not drawn
    spot = by_name["spot"]
    # g5.xlarge spot: 1e9 samples at 900/s = 308.6 h, band from 990/s (faster) to 810/s (slower).
    index = spot["y"].index(min(spot["y"]))
    assert round(spot["x"][index], 1) == 308.6
    assert round(spot["error_x"]["arrayminus"][index], 1) == round(308.64 - 1e9 / 990 / 3600, 1)
    assert len(by_name["Pareto front (time vs cost)"]["x"]) == len(recommendation.pareto)
    assert by_name["top choice"]["text"][0].startswith("1x g5.xlarge spot")


def test_bars_keep_the_best_samples_per_dollar_per_accelerator() -> None:
    figure = plots.samples_per_dollar_bars(make_recommendation())
    bars = figure["data"][0]
    best = dict(zip(bars["y"], bars["x"], strict=True))
    assert set(best) == {"A10G", "A100-SXM4-40GB", "V100-SXM2-16GB"}
    assert best["A10G"] == 900 * 3600 / 0.40  # the spot offer beats the on-demand one


def test_write_report_replaces_the_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "report.html"
    write_report(make_recommendation(), target)
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no partial file left
