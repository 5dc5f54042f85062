"""The report of a language model served at a request rate: what a million tokens cost, whether
the latencies meet the SLO, the deployments' fronts of cost against latency, engines and formats
compared, carbon, and where every price comes from.

It is drawn from the stored answer alone: the deployments the select stage kept (the best region
of each machine, degree and format, and every deployment the explanation names).
"""

from __future__ import annotations

from collections.abc import Sequence

from perdollar.catalog.price_age import price_date_note
from perdollar.fmt import format_money
from perdollar.goals import ServingGoal, served
from perdollar.price.model import Estimate
from perdollar.question import LanguageModelSettings
from perdollar.report.llm_serving_plots import (
    Latency,
    cost_latency_scatter,
    figures_of,
    latency_front,
    latency_of,
    per_million,
)
from perdollar.report.llm_serving_sections import carbon_of_deployments, engines_section, prices_section
from perdollar.report.page import document, escape, fields, figure, table
from perdollar.select.model import Recommendation

RANKED_ROWS = 25
EXCLUDED_ROWS = 60


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g} ms"


def _latencies(goal: ServingGoal | None) -> tuple[Latency, Latency]:
    return (
        Latency("TTFT p99", "ttft_p99_ms", goal.limit_ms("ttft") if goal else None),
        Latency("TPOT p99", "tpot_p99_ms", goal.limit_ms("tpot") if goal else None),
    )


def _against(estimate: Estimate, latency: Latency, *, compact: bool = False) -> str:
    """The latency and, where the question set a limit, whether it meets it (``compact``: a mark
    alone, for a table whose heading names the limit)."""
    value = latency_of(estimate, latency)
    text = escape(_ms(value))
    if value is None or not latency.limit_ms:
        return text
    if value <= latency.limit_ms:
        return f"{text} <span class='pass'>✔{'' if compact else f' met (≤ {latency.limit_ms:g} ms)'}</span>"
    return f"{text} <span class='fail'>✖{'' if compact else f' missed (&gt; {latency.limit_ms:g} ms)'}</span>"


def _heading(latency: Latency) -> str:
    return f"{latency.name} (≤ {latency.limit_ms:g} ms)" if latency.limit_ms else latency.name


def _slo(goal: ServingGoal | None) -> str:
    parts = [f"{latency.name} ≤ {latency.limit_ms:g} ms" for latency in _latencies(goal) if latency.limit_ms]
    return ", ".join(parts) or "no latency objective"


def _layout(estimate: Estimate) -> str:
    figures = figures_of(estimate)
    return f"TP{figures.tensor_parallel} × {figures.precision} ({figures.engine}, KV {figures.kv_precision})"


def _instances(estimate: Estimate) -> str:
    figures = figures_of(estimate)
    spares = figures.spot_extra_instances
    machines = f"{estimate.nodes - spares}+{spares}" if spares else f"{estimate.nodes}"
    return f"{figures.replicas} ({machines})"


def _banner(recommendation: Recommendation, top: Estimate | None) -> str:
    goal = served(recommendation.question.goal)
    if top is None:
        rate = goal.qps if goal else 0.0
        return (
            "<p class='answer' data-field='answer'>No deployment serves "
            f"{rate:g} requests/s within {escape(_slo(goal))}.</p>"
        )
    figures = figures_of(top)
    ttft, tpot = _latencies(goal)
    dated = price_date_note(top.captured_at, recommendation.catalog_captured_at, recommendation.created_at)
    price_date = dated or (top.captured_at or recommendation.catalog_captured_at)[:10]
    engine = f"; engine {figures.engine}, KV cache {figures.kv_precision}" if figures.engine else ""
    spares = f", {figures.spot_extra_instances} of them spot spares" if figures.spot_extra_instances else ""
    return fields(
        [
            ("configuration", "top choice", escape(top.label), "wide"),
            ("plan", "plan", escape(f"{top.plan_text or top.plan}{engine}"), "wide"),
            ("replicas", "replicas", escape(f"{figures.replicas} on {top.nodes} instance(s){spares}"), ""),
            ("price", "price", f"{escape(format_money(top.price_per_hour))}/h ({escape(top.market)})", ""),
            (
                "usd-per-million-output-tokens",
                "per million output tokens",
                escape(per_million(figures.usd_per_million_output_tokens)),
                "",
            ),
            (
                "usd-per-million-tokens",
                "per million tokens, in and out",
                escape(per_million(figures.usd_per_million_tokens)),
                "",
            ),
            ("ttft", "TTFT p99", _against(top, ttft), ""),
            ("tpot", "TPOT p99", _against(top, tpot), ""),
            ("price-date", "price of", escape(price_date), ""),
        ],
        "the answer",
    )


def _question_section(recommendation: Recommendation, settings: LanguageModelSettings) -> str:
    question = recommendation.question
    goal = served(question.goal)
    rate = goal.qps if goal else None
    lengths = None
    if settings.input_tokens or settings.output_tokens:
        lengths = f"{settings.input_tokens or 'default'} tokens in, {settings.output_tokens or 'default'} out"
    rows: list[tuple[str, object]] = [
        ("model", question.workload_name),
        ("fingerprint", question.workload_fingerprint or None),
        ("objective", question.goal.objective),
        ("rate", None if rate is None else f"{rate:g} requests/s"),
        ("request", lengths),
        ("SLO", _slo(goal)),
        ("market", question.market),
        ("clouds", ", ".join(question.clouds) or "all"),
        ("regions", ", ".join(question.regions) or "all"),
        ("format", question.precision),
        ("engine", settings.engine),
        ("KV cache", settings.kv_precision),
        ("prefix share", None if settings.prefix_share is None else f"{settings.prefix_share:.0%}"),
        ("speculative decoding", settings.speculative),
    ]
    shown = [[escape(name), escape(value)] for name, value in rows if value is not None]
    return "<h2>Question and assumptions</h2>" + table(["", ""], shown)


def _latency_section(feasible: Sequence[Estimate], top: Estimate | None, goal: ServingGoal | None) -> str:
    heading = "<h2>Cost vs latency</h2>"
    latencies = _latencies(goal)
    charts = [
        figure(f"cost-{latency.field.split('_')[0]}", plotted, "")
        for latency in latencies
        if (plotted := cost_latency_scatter(feasible, latency, top)) is not None
    ]
    if not charts:
        return heading + "<p class='note'>No deployment has both a latency and a price to draw.</p>"
    fronts = {latency.name: set(latency_front(feasible, latency)) for latency in latencies}
    on_front = [e for e in feasible if any(e in front for front in fronts.values())]
    rows = [
        [
            escape(e.label),
            _against(e, latencies[0], compact=True),
            _against(e, latencies[1], compact=True),
            escape(per_million(figures_of(e).usd_per_million_output_tokens)),
            escape(" and ".join(name for name, front in fronts.items() if e in front)),
        ]
        for e in sorted(on_front, key=lambda e: figures_of(e).usd_per_million_output_tokens or 0.0)
    ]
    return (
        heading
        + "<p class='note'>Each point is a deployment; on the green line no other deployment is both faster "
        "and cheaper per million output tokens. The dashed line is the SLO's limit.</p>"
        + f"<div class='pair'>{''.join(charts)}</div>"
        + "<p class='note'>The deployments on a front, cheapest first:</p>"
        + table(
            ["deployment", *map(_heading, latencies), "$/M output tokens", "on the front of"],
            rows,
            numeric={1, 2, 3},
            table_id="cost-latency-front",
        )
    )


def _ranked_row(
    rank: int, estimate: Estimate, recommendation: Recommendation, latencies: tuple[Latency, Latency]
) -> list[str]:
    figures = figures_of(estimate)
    dated = price_date_note(
        estimate.captured_at, recommendation.catalog_captured_at, recommendation.created_at
    )
    grams = figures.co2e_g_per_million_output_tokens
    return [
        str(rank),
        escape(estimate.label),
        escape(_layout(estimate)),
        escape(_instances(estimate)),
        _against(estimate, latencies[0], compact=True),
        _against(estimate, latencies[1], compact=True),
        escape(format_money(estimate.price_per_hour))
        + (f" <span class='note'>{escape(dated)}</span>" if dated else ""),
        escape(per_million(figures.usd_per_million_output_tokens)),
        escape(per_million(figures.usd_per_million_tokens)),
        "—" if grams is None else f"{grams:.3g}",
        escape(f"{estimate.bottleneck} ({estimate.basis})"),
    ]


def _ranked_section(recommendation: Recommendation) -> str:
    feasible = [e for e in recommendation.estimates if e.feasible]
    excluded = [e for e in recommendation.estimates if not e.feasible]
    latencies = _latencies(served(recommendation.question.goal))
    headers = [
        "#",
        "deployment",
        "TP × format (engine, KV)",
        "replicas (instances)",
        *map(_heading, latencies),
        "USD/h",
        "$/M output tokens",
        "$/M tokens (in and out)",
        "g CO2e / M output tokens",
        "bound by (basis)",
    ]
    rows = [_ranked_row(i + 1, e, recommendation, latencies) for i, e in enumerate(feasible[:RANKED_ROWS])]
    more = f"; the first {RANKED_ROWS} shown" if len(feasible) > RANKED_ROWS else ""
    parts = [f"<h2>Deployments ({len(feasible)} feasible, {len(excluded)} excluded{more})</h2>"]
    if rows:
        parts += [
            table(headers, rows, numeric={3, 4, 5, 6, 7, 8, 9}, sortable=True, table_id="deployments"),
            "<p class='note'>Replicas (instances): the replicas the rate needs, and the instances they run "
            "on (+ spot spares for interruptions). A price captured on another date than the catalog's "
            "shows its date, marked stale when it is too old to trust.</p>",
        ]
    else:
        parts.append("<p class='note'>No deployment meets the SLO at this rate; the reasons are below.</p>")
    if excluded:
        reasons = [
            [escape(e.accelerator or "CPU"), escape(e.excluded_reason)] for e in excluded[:EXCLUDED_ROWS]
        ]
        shown = f" (first {EXCLUDED_ROWS})" if len(excluded) > EXCLUDED_ROWS else ""
        parts.append(
            f"<details><summary>Excluded accelerators{shown}</summary>"
            f"{table(['accelerator', 'why'], reasons)}</details>"
        )
    return "\n".join(parts)


def render_serving_report(recommendation: Recommendation, plotly_js: str, generated_at: str) -> str:
    """The whole page of a language model's serving answer, as a string."""
    question = recommendation.question
    settings = question.language_model or LanguageModelSettings()
    feasible = [e for e in recommendation.estimates if e.feasible and e.serving is not None]
    top = feasible[0] if feasible else None
    notes = "".join(f"<li>{escape(n)}</li>" for n in recommendation.notes)
    goal = served(question.goal)
    rate = goal.qps if goal else 0.0
    body = [
        f"<h1>perdollar: serving {escape(question.workload_name)} at {rate:g} requests/s</h1>",
        f"<p class='meta'>Answered {escape(recommendation.created_at)}; prices from the catalog captured "
        f"<b>{escape(recommendation.catalog_captured_at)}</b> "
        f"(snapshot {escape(recommendation.catalog_snapshot_id)}).</p>",
        _banner(recommendation, top),
        f"<h2>Why</h2><p>{escape(recommendation.explanation)}</p>" + (f"<ul>{notes}</ul>" if notes else ""),
        _question_section(recommendation, settings),
        _latency_section(feasible, top, goal),
        _ranked_section(recommendation),
        engines_section(feasible),
        carbon_of_deployments(recommendation, feasible),
        prices_section(recommendation, feasible),
        f"<p class='note'>Report generated {escape(generated_at)} by perdollar. Figures: spec = predicted "
        "from hardware specs alone, calibrated = from a measured endpoint of this model, measured = on "
        "that machine.</p>",
    ]
    return document(f"serving {question.workload_name}", body, plotly_js)
