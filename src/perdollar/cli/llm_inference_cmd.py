"""``recommend LLM --inference``: the cheapest deployments of a language model within TTFT and TPOT."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from perdollar.ask.offers import check_market
from perdollar.cli import common
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.question import LanguageModelSettings, Question, ServingGoal
from perdollar.vocabulary import TOKEN_SERVING_OBJECTIVE

SECONDS_PER_DAY = 86_400.0


def llm_serving_question(
    workload: str,
    *,
    rps: float | None,
    tokens_per_day: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
    precision: str | None,
    market: str,
    clouds: Sequence[str],
    regions: Sequence[str],
    engine: str | None = None,
    kv_precision: str | None = None,
    features: LanguageModelSettings | None = None,
) -> Question:
    """The question from the options, checked: a rate (requests/s or output tokens a day) and SLOs."""
    check_market(market)
    for flag, value in (("--input-tokens", input_tokens), ("--output-tokens", output_tokens)):
        if value is not None and value < 1:
            raise PerdollarError(f"{flag} must be at least 1, got {value}", f"give e.g. {flag} 500")
    for flag, value in (("--ttft-p99-ms", ttft_p99_ms), ("--tpot-p99-ms", tpot_p99_ms)):
        if value is not None and not value > 0:
            raise PerdollarError(f"{flag} must be positive, got {value:g}", f"give e.g. {flag} 50")
    from perdollar.predict.llm_serving.engines import checked_engine_options

    checked_engine_options(engine, kv_precision)
    engine_features = _engine_features(features)
    if (rps is None) == (tokens_per_day is None):
        raise PerdollarError(
            "serving a language model needs one rate: --rps or --tokens-per-day",
            "e.g. --rps 20 --input-tokens 1000 --output-tokens 300",
        )
    out = output_tokens or 300
    rate = (
        rps
        if rps is not None
        else common.parse_count(tokens_per_day, "--tokens-per-day") / SECONDS_PER_DAY / out
    )
    if not rate > 0:
        raise PerdollarError(f"the request rate must be positive, got {rate:g}", "give e.g. --rps 20")
    return Question(
        workload_name=workload,
        kind="inference",
        objective=TOKEN_SERVING_OBJECTIVE,
        market=market,
        clouds=tuple(c.lower() for c in clouds),
        regions=tuple(regions),
        precision=precision,
        serving=ServingGoal(qps=rate, slo_ms=()),
        language_model=LanguageModelSettings(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            ttft_p99_ms=ttft_p99_ms,
            tpot_p99_ms=tpot_p99_ms,
            engine=engine,
            kv_precision=kv_precision,
            **engine_features,
        ),
    )


def _engine_features(settings: LanguageModelSettings | None) -> dict[str, object]:
    """The serving-engine features given (prefix caching, speculative decoding), checked now."""
    if settings is None:
        return {}
    from perdollar.predict.llm_serving.features import checked_prefix_share, speculation

    speculation(settings.speculative, settings.acceptance, settings.speculative_tokens)
    checked_prefix_share(settings.prefix_share)
    names = ("prefix_share", "speculative", "acceptance", "speculative_tokens", "disaggregate")
    return {name: getattr(settings, name) for name in names}


@dataclass(frozen=True)
class FileLengths:
    input_tokens: int | None
    output_tokens: int
    note: str


def request_lengths(
    path: Path | None, input_tokens: int | None, output_tokens: int | None
) -> FileLengths | None:
    """The mean lengths of the requests in ``--lengths-file`` (None without one)."""
    if path is None:
        return None
    if input_tokens is not None or output_tokens is not None:
        raise PerdollarError(
            "--lengths-file and --input-tokens/--output-tokens both give request lengths",
            "give one of them",
        )
    from perdollar.files import read_user_text
    from perdollar.workload.llm.load_curve import TRACE_MAX_BYTES
    from perdollar.workload.llm.request_lengths import parse_request_lengths

    # One row a request, as a trace has: the same bound.
    text = read_user_text(path, "--lengths-file", TRACE_MAX_BYTES, "give a CSV or JSON Lines file")
    try:
        lengths = parse_request_lengths(text)
    except PerdollarError as error:
        raise PerdollarError(f"--lengths-file {path}: {error.problem}", error.fix) from None
    return FileLengths(
        input_tokens=max(1, round(lengths.input.mean)) if lengths.input else None,
        output_tokens=max(1, round(lengths.output.mean)),
        note=lengths.describe(str(path)),
    )


def recommend_llm_inference(
    question: Question,
    *,
    top: int,
    json_output: bool,
    store_url: str | None,
    store: bool,
    report_path: Path | None,
    lengths_note: str | None = None,
) -> int:
    from perdollar.ask.answer import ask_language_model_serving
    from perdollar.cli.llm_deployment_render import (
        llm_deployment_rows,
        llm_deployment_table,
        llm_excluded_rows,
        missing_energy_line,
    )
    from perdollar.cli.persist import attempt_store, save_recommendation

    with common.progress("recommend --inference", quiet=json_output) as bar:
        answer = ask_language_model_serving(
            question, store_url=store_url, use_store=store,
            progress=lambda message: bar.update(description=message),
        )  # fmt: skip
    recommendation = answer.recommendation
    stored_id, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store_url, enabled=store)
    )
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path)
    rows = llm_deployment_rows(recommendation.estimates, top, recommendation.ties)
    excluded = llm_excluded_rows(recommendation.estimates)
    rps = question.serving.qps if question.serving else 0.0
    if json_output:
        common.emit_json(
            {
                "question": recommendation.question,
                "deployments": rows,
                "excluded": excluded,
                "explanation": recommendation.explanation,
                "notes": recommendation.notes,
                "catalog_captured_at": recommendation.catalog_captured_at,
                "recommendation_id": stored_id,
                **({"request_lengths": lengths_note} if lengths_note else {}),
            },
            table="deployments",
        )
    else:
        if rows:
            by_carbon = question.objective == "carbon"
            table = llm_deployment_table(rows, answer.slo_label, rps, by_carbon=by_carbon)
            fitted = common.print_table(table)
            missing = missing_energy_line(rows, fitted.left_out)
            if missing:
                common.console.print(f"[dim]{missing}[/]", highlight=False)
        common.console.print(recommendation.explanation, highlight=False, markup=False)
        for note in (*recommendation.notes, *([lengths_note] if lengths_note else [])):
            common.console.print(note, highlight=False, markup=False)
        if stored_id:
            common.console.print(f"Stored as recommendation {stored_id}.", highlight=False)
    if not rows:
        reasons = "; ".join(f"{row['accelerator']}: {row['reason']}" for row in excluded[:3])
        raise NothingFeasibleError(
            f"no deployment serves {rps:g} requests/s within {answer.slo_label} ({reasons})",
            "relax the SLOs, lower the rate, or allow more clouds and markets",
        )
    if store_failure is not None:
        raise store_failure
    return 0
