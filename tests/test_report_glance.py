"""The report answers at a glance, at 1400 and at 400 pixels, in real headless Chromium."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

import perdollar
from fixtures.store.cdp import chromium_binary, headless_page, load, screenshot
from perdollar.report.html import write_report

pytestmark = pytest.mark.browser
FIELDS = ("configuration", "plan", "price", "time", "cost", "p-deadline", "price-date")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    if chromium_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing under CI (.ci/run installs the chromium package)")
        pytest.skip("no Chromium here (apt-get install chromium)")
    recommendation = perdollar.recommend("mlp", samples=1e9, deadline_hours=72, clouds=["aws"], max_nodes=2)
    path = write_report(recommendation, tmp_path_factory.mktemp("report") / "report.html")
    return path, recommendation


def _png_width(path: Path) -> int:
    return struct.unpack(">I", path.read_bytes()[16:20])[0]


@pytest.mark.parametrize("width", [1400, 400])
def test_the_answer_reads_at_a_glance(report: tuple[Path, object], width: int, tmp_path: Path) -> None:
    path, recommendation = report
    top = next(e for e in recommendation.estimates if e.feasible)  # type: ignore[attr-defined]
    with headless_page(width=width, height=1000) as page:
        load(page, path)
        field = "document.querySelector(\"[data-field='{}'] dd\").textContent"
        banner = {name: page.evaluate(field.format(name)) for name in FIELDS}
        assert banner["configuration"] == top.label
        assert banner["price"].startswith("$") and "/h" in banner["price"]
        assert " h" in banner["time"] or " d" in banner["time"]
        assert banner["cost"].removeprefix("expected ").startswith("$") and "…" in banner["cost"]
        assert banner["p-deadline"].endswith("(by 3.0 d)") and "%" in banner["p-deadline"]
        assert banner["price-date"][:2] in ("20", "pr")

        chart = "#time-cost"
        labels = page.evaluate(
            f"[...document.querySelectorAll('{chart} .textpoint')].map(t => t.textContent)"
        )
        assert labels and labels[0].startswith("#1 ")
        assert page.evaluate(f"document.querySelectorAll('{chart} .shapelayer path').length") >= 1
        notes = page.evaluate(
            f"[...document.querySelectorAll('{chart} .annotation-text')].map(a => a.textContent)"
        )
        assert "deadline 72 h" in notes
        assert "hours" in page.evaluate(f"document.querySelector('{chart} .xtitle').textContent")
        assert "dollars" in page.evaluate(f"document.querySelector('{chart} .ytitle').textContent")
        ticks = page.evaluate(
            f"[...document.querySelectorAll('{chart} .xtick text')].map(t => t.textContent)"
        )
        assert len(ticks) >= 2 and all(tick.endswith(" h") for tick in ticks)
        costs = page.evaluate(
            f"[...document.querySelectorAll('{chart} .ytick text')].map(t => t.textContent)"
        )
        assert len(costs) >= 2 and all(tick.startswith("$") for tick in costs)
        # Nothing widens the page: the table scrolls in its own box, the charts fit the viewport.
        viewport = page.evaluate("window.innerWidth")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport
        chart_width = page.evaluate(
            f"document.querySelector('{chart} .main-svg').getBoundingClientRect().width"
        )
        assert chart_width <= viewport
        if width == 400:
            assert page.evaluate(
                "(b => b.scrollWidth > b.clientWidth)(document.querySelector('table.sortable').parentElement)"
            )
        assert page.problems() == []
        shot = screenshot(page, tmp_path / f"report-{width}.png")
        # The whole page is no wider than the window (less its scroll bar): nothing overflows sideways.
        assert width - 20 <= _png_width(shot) <= width
        assert shot.stat().st_size > 20_000


def test_the_ranked_table_sorts_by_a_column(report: tuple[Path, object]) -> None:
    path, _ = report
    with headless_page(width=1400, height=1000) as page:
        load(page, path)
        prices = (
            "[...document.querySelectorAll('table.sortable tbody tr')]"
            ".map(r => parseFloat(r.cells[5].textContent.replace(/[$,]/g, '')))"
        )
        heads = "[...document.querySelectorAll('table.sortable th')]"
        column = f"{heads}.findIndex(th => th.textContent.startsWith('USD/h'))"
        assert page.evaluate(column) == 5
        page.evaluate("document.querySelectorAll('table.sortable th')[5].click()")
        ascending = page.evaluate(prices)
        assert ascending == sorted(ascending) and len(ascending) > 3
        page.evaluate("document.querySelectorAll('table.sortable th')[5].click()")
        assert page.evaluate(prices) == sorted(ascending, reverse=True)
