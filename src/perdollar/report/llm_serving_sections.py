"""The serving report's comparisons: engines and formats, the lowest-emission deployment and the
cost-vs-carbon front, and the date and source of every price."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from perdollar.catalog.price_age import is_stale
from perdollar.catalog.price_outliers import PRICE_OUTLIER_FLAG
from perdollar.price.model import Estimate
from perdollar.report.carbon_plot import carbon_section
from perdollar.report.llm_serving_plots import engine_format_bars, figures_of, per_million
from perdollar.report.page import escape, figure, table
from perdollar.select.model import Recommendation

FLAGGED_ROWS = 25  # the deployments whose catalog flags are explained (the ranked table's rows)


def best_by_engine_and_format(feasible: Sequence[Estimate]) -> dict[tuple[str, str], Estimate]:
    """The cheapest deployment per million output tokens of each (engine, format), judged, as the
    explanation judges them, by prices not flagged implausible (when any is)."""
    plausible = [e for e in feasible if PRICE_OUTLIER_FLAG not in e.flags]
    best: dict[tuple[str, str], Estimate] = {}
    for estimate in plausible or feasible:
        figures = figures_of(estimate)
        cost = figures.usd_per_million_output_tokens
        if cost is None or not figures.engine or not figures.precision:
            continue
        key = (figures.engine, figures.precision)
        held = best.get(key)
        if held is None or cost < (figures_of(held).usd_per_million_output_tokens or cost):
            best[key] = estimate
    return best


def _best_rows(best: dict[tuple[str, str], Estimate], part: int) -> list[list[str]]:
    """One row per engine (``part`` 0) or format (1): its cheapest deployment, × the cheapest of all."""
    cost = {key: figures_of(e).usd_per_million_output_tokens or 0.0 for key, e in best.items()}
    cheapest = min(cost.values())
    winners: dict[str, tuple[str, str]] = {}
    for key in sorted(cost, key=lambda k: cost[k]):
        winners.setdefault(key[part], key)
    return [
        [
            f"<b>{escape(name)}</b>",
            escape(per_million(cost[key])),
            "cheapest" if cost[key] == cheapest else f"{cost[key] / cheapest:.2g}×",
            escape(best[key].label),
        ]
        for name, key in winners.items()
    ]


def engines_section(feasible: Sequence[Estimate]) -> str:
    """The best of each engine and of each format, as tables and one bar per (engine, format)."""
    heading = "<h2>Engines and formats compared</h2>"
    best = best_by_engine_and_format(feasible)
    if not best:
        return ""
    engines = {engine for engine, _ in best}
    formats = {fmt for _, fmt in best}
    if len(engines) == 1 and len(formats) == 1:
        return heading + (
            f"<p class='note'>Every deployment runs {escape(min(engines))} in {escape(min(formats))}: there "
            "is nothing to compare (asked without --engine and --precision, the answer compares them).</p>"
        )
    headers = ["best $/M output tokens", "× the cheapest", "deployment"]
    values = {key: figures_of(e).usd_per_million_output_tokens or 0.0 for key, e in best.items()}
    return (
        heading
        + "<p class='note'>The best USD per million output tokens each engine and each format reaches, and "
        "the deployment that reaches it.</p><div class='pair'><div>"
        + table(["engine", *headers], _best_rows(best, 0), numeric={1, 2}, table_id="by-engine")
        + "</div><div>"
        + table(["format", *headers], _best_rows(best, 1), numeric={1, 2}, table_id="by-format")
        + "</div></div>"
        + figure("engine-format", engine_format_bars(values), "")
    )


def lowest_emission(feasible: Sequence[Estimate]) -> Estimate | None:
    """The deployment with the least CO2e per million output tokens (the first of equals, in rank
    order), among those with both their carbon and their price: the one the explanation names."""
    known = [
        e
        for e in feasible
        if figures_of(e).co2e_g_per_million_output_tokens is not None
        and figures_of(e).usd_per_million_output_tokens is not None
    ]
    return min(known, key=lambda e: figures_of(e).co2e_g_per_million_output_tokens or 0.0, default=None)


def carbon_of_deployments(recommendation: Recommendation, feasible: Sequence[Estimate]) -> str:
    """The lowest-emission deployment, then the cost-vs-carbon front ('' where no carbon is known)."""
    lowest = lowest_emission(feasible)
    if lowest is None:
        return ""
    figures = figures_of(lowest)
    lead = (
        f"<p data-field='lowest-emission'>Lowest emissions: <b>{escape(lowest.label)}</b>, "
        f"{figures.co2e_g_per_million_output_tokens:.3g} g CO2e and "
        f"{escape(per_million(figures.usd_per_million_output_tokens))} per million output tokens"
        + (f" ({figures.grid_gco2e_per_kwh:.0f} g/kWh grid)" if figures.grid_gco2e_per_kwh else "")
        + ".</p>"
    )
    return carbon_section(recommendation, cost_heading="$/M output tokens", lead=lead)


def prices_section(recommendation: Recommendation, feasible: Sequence[Estimate]) -> str:
    """The catalog's snapshot and date, and how many deployments rest on each price date and source."""
    counted = Counter(
        (
            e.cloud,
            e.market,
            (e.captured_at or recommendation.catalog_captured_at)[:10],
            figures_of(e).price_basis or "not recorded with this answer",
        )
        for e in feasible
    )
    rows = [
        [
            escape(cloud),
            escape(market),
            escape(date)
            + (" <span class='fail'>stale</span>" if is_stale(date, recommendation.created_at) else ""),
            escape(basis),
            str(count),
        ]
        for (cloud, market, date, basis), count in sorted(
            counted.items(), key=lambda i: (i[0][2], i[0][:2]), reverse=True
        )
    ]
    stale = any(is_stale(date, recommendation.created_at) for _, _, date, _ in counted)
    lines = [
        "<h2>Prices</h2>",
        f"<p>From the catalog snapshot <b>{escape(recommendation.catalog_snapshot_id)}</b>, captured "
        f"<b>{escape(recommendation.catalog_captured_at)}</b>; a snapshot gathers prices of several dates "
        "and sources.</p>",
    ]
    if rows:
        lines.append(
            table(
                ["cloud", "market", "price of", "source", "deployments"],
                rows,
                numeric={4},
                table_id="price-sources",
            )
        )
    if stale:
        lines.append(
            "<p class='note'>A stale price is older than the freshness limit: "
            "<code>perdollar catalog refresh</code> fetches today's.</p>"
        )
    flags = sorted({flag for e in feasible[:FLAGGED_ROWS] for flag in e.flags})
    if flags:
        from perdollar.catalog.provenance import flag_meanings

        meanings = flag_meanings()
        items = "".join(
            f"<li><b>{escape(f)}</b>: {escape(meanings.get(f, 'no explanation recorded'))}</li>"
            for f in flags
        )
        lines.append(
            f"<p class='note'>Catalog data-quality flags on the deployments shown:</p>"
            f"<ul class='note'>{items}</ul>"
        )
    return "\n".join(lines)
