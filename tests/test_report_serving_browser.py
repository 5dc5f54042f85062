"""A language model's serving answer, drawn as its own report and read in real headless Chromium:
tokens, latencies against the SLO, the fronts, engines and formats, carbon and prices, each as the
command answered it (its --json), and no training wording."""

from __future__ import annotations

import re
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
SERVING = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
           "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--json")  # fmt: skip


def _best_of(explanation: str, by: str) -> dict[str, str]:
    """The command's "best cost per million output tokens by engine: vllm $0.0785, …" as a dict."""
    line = re.search(rf"by {by}: (.+?)\.$", explanation, re.M)
    assert line is not None, explanation
    return dict(re.findall(r"([\w.-]+) (\$[\d.]+)", line.group(1)))


def _non_dominated(points: list[tuple[float, float, str]]) -> set[str]:
    """Brute force: the points no other matches on both axes and beats on one."""
    return {
        text for x, y, text in points
        if not any(a <= x and b <= y and (a < x or b < y) for a, b, _ in points)
    }  # fmt: skip


def test_a_serving_answer_is_reported_in_tokens_latencies_and_prices(
    report_page: Page, tmp_path: Path
) -> None:
    page = report_page
    answer, report = answer_and_report(tmp_path, *SERVING)
    text = read_sanely(page, report, tmp_path)
    assert not re.search(r"sample|epoch", text, re.I)  # no training wording anywhere

    top, limits = answer["deployments"][0], answer["question"]["language_model"]
    assert field(page, "configuration") == top["label"]
    assert field(page, "usd-per-million-output-tokens") == f"${top['usd_per_million_output_tokens']:.3g}"
    assert field(page, "usd-per-million-tokens") == f"${top['usd_per_million_tokens']:.3g}"
    for name in ("ttft", "tpot"):
        limit = limits[f"{name}_p99_ms"]
        assert field(page, name) == f"{top[f'{name}_p99_ms']:.3g} ms ✔ met (≤ {limit:g} ms)"
    assert f"TTFT p99 ≤ {limits['ttft_p99_ms']:g} ms, TPOT p99 ≤ {limits['tpot_p99_ms']:g} ms" in text

    # Each chart draws every deployment the answer lists, and its front holds exactly the
    # deployments no other beats on both that latency and the price.
    labels = {row["label"] for row in answer["deployments"]}
    for chart in ("cost-ttft", "cost-tpot"):
        drawn = traces(page, chart)
        points = [(x, y, t) for trace in drawn if trace["name"] in ("spot", "on-demand")
                  for x, y, t in zip(trace["x"], trace["y"], trace["text"], strict=True)]  # fmt: skip
        assert labels <= {t.split("<br>")[0] for _, _, t in points}
        front = next(trace for trace in drawn if trace["name"].startswith("front"))
        assert set(front["text"]) == _non_dominated(points)

    # The lowest-emission deployment is the one the command named, with its grams.
    named = re.search(r"The lowest-emission deployment: (.+?): .+?and ([\d.]+) g CO2e", answer["explanation"])
    assert named is not None, answer["explanation"]
    lowest = str(page.evaluate("document.querySelector(\"[data-field='lowest-emission']\").innerText"))
    assert lowest.startswith(f"Lowest emissions: {named.group(1)}, {named.group(2)} g CO2e")

    # Engines and formats compared as the command compared them.
    for table, by in (("by-engine", "engine"), ("by-format", "format")):
        assert {row[0]: row[1] for row in rows(page, table)} == _best_of(answer["explanation"], by)

    # Every listed price's date and source, beside the catalog's date.
    sources = {(row[2].removesuffix(" stale"), row[3]) for row in rows(page, "price-sources")}
    assert {(row["price_captured_at"], row["price_basis"]) for row in answer["deployments"]} <= sources
    assert answer["catalog_captured_at"] in text
