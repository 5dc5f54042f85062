"""The HTML report's cost-vs-carbon front, read back out of the page."""

from __future__ import annotations

import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from cli_runner import run_perdollar
from fixtures.store.samples import make_estimate, make_recommendation
from perdollar.report.html import render_report


class _Page(HTMLParser):
    """The page's scripts, and the rows of the table with id ``cost-carbon-front``."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[str] = []
        self.front_rows: list[list[str]] = []
        self._in_script = False
        self._in_front = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._in_script = True
            self.scripts.append("")
        elif tag == "table":
            self._in_front = dict(attrs).get("id") == "cost-carbon-front"
        elif tag == "tr" and self._in_front:
            self.front_rows.append([])
        elif tag == "td" and self._in_front:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        elif tag == "table":
            self._in_front = False
        elif tag == "td" and self._cell is not None:
            self.front_rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts[-1] += data
        elif self._cell is not None:
            self._cell.append(data)


def _front_figure(page: str) -> tuple[list[dict], list[list[str]]]:
    parser = _Page()
    parser.feed(page)
    scripts = [s for s in parser.scripts if 'Plotly.newPlot("cost-carbon"' in s]
    assert len(scripts) == 1
    data = re.search(r'Plotly\.newPlot\("cost-carbon", (\[.*?\]), \{', scripts[0], re.S)
    assert data is not None
    return json.loads(data.group(1)), [row for row in parser.front_rows if row]


def _non_dominated(points: list[tuple[float, float, str]]) -> set[str]:
    """Brute force: the labels no other point matches on both axes and beats on one."""
    return {
        label for x, y, label in points
        if not any(a <= x and b <= y and (a < x or b < y) for a, b, _ in points)
    }  # fmt: skip


def _check_front(page: str) -> list[str]:
    traces, rows = _front_figure(page)
    candidates, front = traces[0], traces[1]
    points = list(zip(candidates["x"], candidates["y"], candidates["text"], strict=True))
    assert len(points) >= 3
    assert set(front["text"]) == _non_dominated(points)
    assert front["x"] == sorted(front["x"]) and front["y"] == sorted(front["y"], reverse=True)
    assert [row[0] for row in rows] == front["text"]
    return front["text"]


def test_a_training_report_draws_the_front_of_its_carbon_candidates() -> None:
    carbon_and_cost = [(30.0, 100.0), (10.0, 300.0), (20.0, 200.0), (25.0, 250.0), (40.0, 90.0)]
    estimates = tuple(
        dataclasses.replace(make_estimate(f"m{i}.xlarge"), carbon_kg=kg, expected_cost_usd=usd)
        for i, (kg, usd) in enumerate(carbon_and_cost)
    )
    page = render_report(make_recommendation(estimates=estimates), plotly_js="")
    front = _check_front(page)
    # (25 kg, $250) is beaten by (20 kg, $200) on both: it is off the front.
    assert len(front) == 4 and not any(label.startswith("1x m3.xlarge") for label in front)


def test_a_report_without_carbon_has_no_front() -> None:
    page = render_report(make_recommendation(), plotly_js="")
    assert "cost-carbon" not in page


def test_a_serving_report_draws_its_deployments_front(tmp_path: Path) -> None:
    report = tmp_path / "serve.html"
    done = run_perdollar("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens",
                         "1000", "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50",
                         "--no-store", "--report", str(report))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "g CO2e per million output tokens" in report.read_text(encoding="utf-8")
    assert len(_check_front(report.read_text(encoding="utf-8"))) >= 2
