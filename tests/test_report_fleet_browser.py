"""A fleet over the day, drawn as its own report and read in real headless Chromium: replicas and
cost drawn across the day, the day hour by hour, and the static peak's cost and the saving, each as
the command answered it (its --json), with the date of the prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.store.cdp import Page
from fixtures.store.report_page import (
    answer_and_report,
    field,
    read_sanely,
    rows,
    traces,
)

pytestmark = pytest.mark.browser
FLEET = ("recommend", "llama-3.1-8b", "--inference", "--input-tokens", "1500", "--output-tokens", "300",
         "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--cloud", "aws", "--json")  # fmt: skip


def _dollars(shown: str) -> float:
    """ "$1,433 a month" → 1433."""
    return float(shown.split()[0].strip("$()").replace(",", ""))


def test_a_fleet_answer_is_reported_hour_by_hour_against_the_static_peak(
    report_page: Page, tmp_path: Path
) -> None:
    page = report_page
    curve = tmp_path / "day.csv"
    curve.write_text("hour,requests_per_second\n0,4\n8,24\n20,10\n")
    answer, report = answer_and_report(tmp_path, *FLEET, "--load-curve", str(curve))
    text = read_sanely(page, report, tmp_path)

    intervals = answer["intervals"]
    hours = rows(page, "per-hour")
    assert [row[0] for row in hours] == [interval["start"] for interval in intervals]
    for row, interval in zip(hours, intervals, strict=True):
        assert row[2] == f"{interval['requests_per_second']:.3g}"
        assert row[3] == str(interval["replicas"])
        assert row[4].startswith(interval["fleet"])  # the instances by machine and market
        assert row[6] == f"${interval['usd_per_hour']:,.2f}"

    # The charts step through the day: replicas and $/h of the chosen fleet and of the static peak.
    replicas = {trace["name"]: trace["y"] for trace in traces(page, "replicas-over-the-day")}
    assert replicas["chosen fleet (replicas)"][:-1] == [i["replicas"] for i in intervals]
    assert replicas["static peak (replicas)"][:-1] == [i["static_peak_replicas"] for i in intervals]
    cost = {trace["name"]: trace["y"] for trace in traces(page, "cost-over-the-day")}
    assert cost["chosen fleet ($/h)"][:-1] == pytest.approx([i["usd_per_hour"] for i in intervals])

    fleets = {row[0]: row for row in rows(page, "fleets")}
    static, chosen = answer["static_peak"]["usd_per_month"], answer["fleet"]["usd_per_month"]
    assert _dollars(fleets["static peak"][2]) == pytest.approx(static, abs=0.5)
    assert _dollars(fleets["chosen fleet"][2]) == pytest.approx(chosen, abs=0.5)
    saving = field(page, "saving")
    assert saving.startswith(f"{answer['saving_vs_static_peak']:.0%} (")
    assert _dollars(saving.split(" (")[1]) == pytest.approx(static - chosen, abs=1)
    assert field(page, "price-date").startswith(answer["catalog_captured_at"][:10])
    assert answer["catalog_captured_at"] in text
