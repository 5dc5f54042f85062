"""The HTML report in real headless Chromium: loads cleanly, plots render, names stay text."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fixtures.store.cdp import Page, chromium_binary, headless_page, load, screenshot
from fixtures.store.samples import make_recommendation
from perdollar.report.checklist import CheckItem
from perdollar.report.html import write_report

HOSTILE = "<script>alert(1)</script>"
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    if chromium_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing under CI (.ci/run installs the chromium package)")
        pytest.skip("no Chromium here (apt-get install chromium)")
    with headless_page() as opened:
        yield opened


def test_report_loads_without_errors_renders_plots_and_keeps_hostile_names_inert(
    page: Page, tmp_path: Path
) -> None:
    recommendation = make_recommendation(workload=HOSTILE)
    checklist = (
        CheckItem(
            "utilisation",
            "Accelerator utilisation ≥ 80%",
            "warn",
            f"GPU busy 41% {HOSTILE}",
            "profile the step",
        ),
    )
    report = write_report(recommendation, tmp_path / "report.html", checklist=checklist)
    load(page, report)

    points = page.evaluate("document.querySelectorAll('#time-cost .scatterlayer .point').length")
    bars = page.evaluate("document.querySelectorAll('#per-dollar .barlayer .point').length")
    spot_points = page.evaluate("document.querySelectorAll('#spot .scatterlayer .point').length")
    feasible = sum(e.feasible for e in recommendation.estimates)
    assert points >= feasible  # every feasible candidate, plus the Pareto front and the top-choice star
    assert bars == 3  # A10G, A100, V100: one bar per accelerator
    assert spot_points == 2

    # The hostile name is shown as text, never parsed into an element or executed.
    assert page.evaluate("document.querySelector('h1').textContent").endswith(HOSTILE)
    assert page.evaluate("[...document.scripts].filter(s => s.textContent.includes('alert(1)')).length") == 0
    assert page.evaluate(
        "[...document.querySelectorAll('td')].some(td => td.textContent.includes('alert(1)'))"
    )
    assert page.problems() == []  # no console error, no exception, no alert dialog

    shot = screenshot(page, tmp_path / "report.png")
    assert shot.stat().st_size > 50_000
    keep = os.environ.get("PERDOLLAR_KEEP_SCREENSHOT")
    if keep:  # lets a person look at what the browser showed
        shutil.copy(shot, keep)


class _ExternalReferences(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value and not value.startswith(("data:", "#")):
                self.found.append(f"<{tag} {name}={value}>")


def test_report_is_self_contained(tmp_path: Path) -> None:
    report = write_report(make_recommendation(), tmp_path / "offline.html")
    text = report.read_text()
    parser = _ExternalReferences()
    parser.feed(text)
    assert parser.found == []  # nothing fetched: plotly.js is embedded
    assert text.count("Plotly.newPlot(") == 3
