"""``recommend LLM --inference --load-curve FILE`` (or ``--trace FILE``): a fleet over the day."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perdollar.cli import common
from perdollar.errors import EXIT_OK, PerdollarError
from perdollar.files import read_user_text
from perdollar.question import Question
from perdollar.workload.llm.load_curve import (
    LOAD_CURVE_MAX_BYTES,
    TRACE_MAX_BYTES,
    LoadCurve,
    RequestClass,
    parse_load_curve,
    parse_trace,
)

DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 300


def read_traffic(
    load_curve: Path | None, trace: Path | None, input_tokens: int | None, output_tokens: int | None
) -> tuple[LoadCurve, str, str]:
    """The traffic the flags name, parsed, with its kind and text (kept with the stored question);
    bad files say what is wrong and how to fix it."""
    if load_curve is not None and trace is not None:
        raise PerdollarError("--load-curve and --trace both give the traffic", "give one of them")
    flag, path = ("--load-curve", load_curve) if load_curve is not None else ("--trace", trace)
    assert path is not None
    limit = LOAD_CURVE_MAX_BYTES if load_curve is not None else TRACE_MAX_BYTES
    text = read_user_text(path, flag, limit, "give a CSV or JSON Lines file",
                          smaller="give a shorter span, or its hourly rates as --load-curve")  # fmt: skip
    kind = flag.removeprefix("--")
    curve = parse_traffic(kind, text, path.name, input_tokens, output_tokens, named=f"{flag} {path}")
    return curve, kind, text


def parse_traffic(
    kind: str, text: str, source: str, input_tokens: int | None, output_tokens: int | None, *, named: str
) -> LoadCurve:
    """``text`` read as a load curve or a trace (``kind``); ``named`` says where it came from."""
    try:
        if kind == "load-curve":
            request = RequestClass(
                "all", input_tokens or DEFAULT_INPUT_TOKENS, output_tokens or DEFAULT_OUTPUT_TOKENS
            )
            return parse_load_curve(text, request, source=source)
        if input_tokens is not None or output_tokens is not None:
            raise PerdollarError(
                "--trace gives each request's lengths; --input-tokens/--output-tokens would be ignored",
                "leave out --input-tokens and --output-tokens",
            )
        return parse_trace(text, source=source)
    except PerdollarError as error:
        if error.problem.startswith("--"):
            raise
        raise PerdollarError(f"{named}: {error.problem}", error.fix) from None


def _hour_label(start_s: float, is_trace: bool) -> str:
    if is_trace:
        return f"+{start_s / 3600:.1f}h"
    minutes = round(start_s / 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def fleet_document(answer: Any, question: Question) -> dict[str, Any]:
    """The whole answer as plain data: intervals, the three fleets, replay, notes."""
    choice = answer.choice
    mixed, static = choice.mixed, choice.static_peak
    intervals = []
    for h, interval in enumerate(answer.curve.intervals):
        hours = interval.duration_s / 3600
        replay = answer.replay[h]
        intervals.append({
            "start": _hour_label(interval.start_s, bool(answer.curve.requests)),
            "duration_s": interval.duration_s,
            "requests_per_second": interval.requests_per_second,
            "replicas": mixed.replicas(h),
            "fleet": mixed.composition(h),
            "spot_instances": mixed.instances_on(h, spot=True),
            "on_demand_instances": mixed.instances_on(h, spot=False),
            "usd_per_hour": mixed.cost_per_interval[h] / hours,
            "static_peak_replicas": static.replicas(h),
            "static_peak_usd_per_hour": static.cost_per_interval[h] / hours,
            "replay_ttft_p99_ms": replay.ttft_p99_ms,
            "replay_tpot_p99_ms": replay.tpot_p99_ms,
            "replay_requests": replay.requests,
            "meets_slo": replay.meets_slo,
            "added_by_replay": answer.added_by_replay[h] if answer.added_by_replay else 0,
        })  # fmt: skip
    out_tokens, all_tokens = answer.output_tokens(), answer.all_tokens()

    def summary(fleet: Any) -> dict[str, Any]:
        return {
            "fleet": fleet.name,
            "parts": [o.label for o in fleet.options],
            "price_captured_at": [o.captured_at or None for o in fleet.options],
            "usd_per_month": answer.month_usd(fleet),
            "usd_per_million_output_tokens": fleet.cost / out_tokens * 1e6,
            "usd_per_million_tokens": fleet.cost / all_tokens * 1e6,
            "spot_share": fleet.spot_share(answer.durations),
            "co2e_kg_per_month": answer.month_co2e_kg(fleet),
        }

    return {
        "question": question,
        "slo": answer.slo_label,
        "intervals": intervals,
        "fleet": summary(mixed),
        "autoscaled_single_type": summary(choice.autoscaled),
        "static_peak": summary(static),
        "saving_vs_static_peak": 1 - mixed.cost / static.cost,
        "replay_slo_met_share": answer.slo_met_share(),
        "notes": answer.notes,
    }


def _print(document: dict[str, Any]) -> None:
    from perdollar.terminal_tables import FittingTable

    table = FittingTable(title=f"Fleet over the day within {document['slo']}")
    # (header, drop order): a narrow terminal leaves out the highest first; 0 stays.
    for column, drop_order in (
        ("start", 0),
        ("rps", 2),
        ("replicas", 1),
        ("fleet (spot / on-demand)", 0),
        ("$/h", 0),
        ("static peak", 4),
        ("replay p99 ms", 3),
    ):
        table.add_column(
            column,
            justify="left" if column.startswith("fleet") else "right",
            no_wrap=not column.startswith("fleet"),  # figures read together stay on their line
            drop_order=drop_order,
        )
    for row in document["intervals"]:
        table.add_row(
            row["start"], f"{row['requests_per_second']:.3g}", str(row["replicas"]),
            f"{row['fleet']} ({row['spot_instances']} / {row['on_demand_instances']})",
            f"${row['usd_per_hour']:.2f}",
            f"{row['static_peak_replicas']} · ${row['static_peak_usd_per_hour']:.2f}",
            f"{row['replay_ttft_p99_ms']:.0f} / {row['replay_tpot_p99_ms']:.1f}"
            + ("" if row["meets_slo"] else " ✗")
            + (f" (+{row['added_by_replay']} by replay)" if row["added_by_replay"] else ""),
        )  # fmt: skip
    common.print_table(table)
    lines = []
    for key, name in (("fleet", "Chosen fleet"), ("autoscaled_single_type", "One type, autoscaled"),
                      ("static_peak", "Static peak")):  # fmt: skip
        part = document[key]
        emitted = part.get("co2e_kg_per_month")
        lines.append(
            f"{name}: ${part['usd_per_month']:,.0f} a month, "
            f"${part['usd_per_million_output_tokens']:.3g} per million output tokens "
            f"(${part['usd_per_million_tokens']:.3g} in and out), "
            + (f"{emitted:,.0f} kg CO₂e a month, " if emitted is not None else "")
            + f"spot share {part['spot_share']:.0%} — {'; '.join(part['parts'])}"
            + _price_dates(part)
        )
    lines.append(
        f"Saving against the static peak: {document['saving_vs_static_peak']:.0%}. Replay: the SLO met in "
        f"{document['replay_slo_met_share']:.0%} of intervals."
    )
    for line in (*lines, *document["notes"]):
        common.console.print(line, highlight=False, markup=False)


def _price_dates(part: dict[str, Any]) -> str:
    """ "(prices of 2025-11-30)": the dates of the prices the fleet's machines are billed at."""
    dates = sorted({d for d in part.get("price_captured_at") or () if d})
    return f" (prices of {' … '.join(dict.fromkeys((dates[0], dates[-1])))})" if dates else ""


def recommend_llm_fleet(
    question: Question, curve: LoadCurve, *, json_output: bool, report_path: Path | None,
    store_url: str | None = None, store: bool = False,
) -> int:  # fmt: skip
    """The fleet for ``question`` (whose ``traffic`` holds the curve's text and how the fleet
    autoscales), shown and stored."""
    from perdollar.ask.policy import fleet_policy
    from perdollar.catalog import load as load_catalog
    from perdollar.cli.fleet_history import answer_fleet, fleet_recommendation
    from perdollar.cli.persist import attempt_store, save_recommendation

    assert question.traffic is not None
    policy = fleet_policy(question.traffic)
    catalog = load_catalog()
    with common.progress("recommend --inference --load-curve", quiet=json_output) as bar:
        answer = answer_fleet(
            question, curve, catalog, policy, question.traffic.instance_start_s,
            progress=lambda message: bar.update(description=message),
        )  # fmt: skip
    document = fleet_document(answer, question)
    recommendation = fleet_recommendation(question, document, catalog)
    stored_id, store_failure = attempt_store(
        lambda: save_recommendation(recommendation, store_url=store_url, enabled=store, catalog=catalog)
    )
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path, option="--report")
    if json_output:
        common.emit_json({**document, "catalog_captured_at": recommendation.catalog_captured_at,
                          "recommendation_id": stored_id}, table="intervals")  # fmt: skip
    else:
        _print(document)
        if stored_id:
            common.console.print(
                f"Stored as recommendation {stored_id} (`perdollar history reevaluate {stored_id}` asks it"
                " again).",
                highlight=False,
            )
    if store_failure is not None:
        raise store_failure
    return EXIT_OK
