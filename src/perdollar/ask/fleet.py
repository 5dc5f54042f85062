"""A fleet over a day as a route of :func:`perdollar.ask.answer`: its traffic read, its policy, its
answer as plain data, stored, and asked again.

The stored question carries the traffic's text (:class:`perdollar.goals.FleetTraffic`), so a
fleet can be asked again after its load curve or trace file is gone; the stored answer carries
the fleet's figures as plain data, which ``history reevaluate`` compares (:func:`compared`) and
``report`` draws (:mod:`perdollar.report.fleet_html`). The fleet itself is sized, priced and
replayed in :mod:`perdollar.ask.fleet_sizing`.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.errors import PerdollarError
from perdollar.files import read_user_text
from perdollar.fmt import format_money
from perdollar.goals import FleetGoal
from perdollar.question import Question
from perdollar.vocabulary import TrafficKind
from perdollar.workload.llm.load_curve import (
    LOAD_CURVE_MAX_BYTES,
    TRACE_MAX_BYTES,
    LoadCurve,
    RequestClass,
    parse_load_curve,
    parse_trace,
)

if TYPE_CHECKING:
    from perdollar.ask.fleet_sizing import FleetAnswer
    from perdollar.ask.inputs import Progress
    from perdollar.catalog import Catalog
    from perdollar.price.fleet import Fleet
    from perdollar.report.changes import Reevaluation
    from perdollar.select.model import Recommendation

DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 300
# What a stored fleet is compared by when it is asked again.
HEADLINE_KEYS = ("fleet", "autoscaled_single_type", "static_peak", "saving_vs_static_peak",
                 "replay_slo_met_share")  # fmt: skip
MONTHLY_MOVE_NOTED = 0.005  # a relative move of a monthly cost worth a sentence


def read_traffic(
    load_curve: Path | None, trace: Path | None, input_tokens: int | None, output_tokens: int | None
) -> tuple[LoadCurve, TrafficKind, str]:
    """The traffic the flags name, parsed, with its kind and text (kept with the stored question);
    bad files say what is wrong and how to fix it."""
    if load_curve is not None and trace is not None:
        raise PerdollarError("--load-curve and --trace both give the traffic", "give one of them")
    flag, path = ("--load-curve", load_curve) if load_curve is not None else ("--trace", trace)
    assert path is not None
    limit = LOAD_CURVE_MAX_BYTES if load_curve is not None else TRACE_MAX_BYTES
    text = read_user_text(path, flag, limit, "give a CSV or JSON Lines file",
                          smaller="give a shorter span, or its hourly rates as --load-curve")  # fmt: skip
    kind: TrafficKind = "load-curve" if load_curve is not None else "trace"
    curve = parse_traffic(kind, text, path.name, input_tokens, output_tokens, named=f"{flag} {path}")
    return curve, kind, text


def parse_traffic(
    kind: str, text: str, source: str, input_tokens: int | None, output_tokens: int | None, *, named: str
) -> LoadCurve:
    """``text`` read as a load curve or a trace (``kind``); ``named`` says where it came from."""
    try:
        return _parsed(kind, text, source, input_tokens, output_tokens)
    except PerdollarError as error:
        if error.problem.startswith("--"):
            raise
        raise PerdollarError(f"{named}: {error.problem}", error.fix) from None


# A question's traffic is read when it is built and again when it is answered: the second
# reading of the same text (up to a trace's 128 MiB) is the first one's curve.
@functools.lru_cache(maxsize=2)
def _parsed(
    kind: str, text: str, source: str, input_tokens: int | None, output_tokens: int | None
) -> LoadCurve:
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


def stored_curve(question: Question) -> LoadCurve:
    """The question's traffic, read again from the text kept with it."""
    goal = question.goal
    assert isinstance(goal, FleetGoal)
    traffic = goal.traffic
    settings = question.language_model
    lengths: tuple[int | None, int | None] = (None, None)
    if traffic.kind == "load-curve" and settings is not None:
        lengths = (settings.input_tokens, settings.output_tokens)
    return parse_traffic(traffic.kind, traffic.text, traffic.source, *lengths,
                         named=f"the stored {traffic.kind} {traffic.source}")  # fmt: skip


def answer_fleet(question: Question, *, catalog: Catalog, progress: Progress) -> Recommendation:
    """The fleet over the day for ``question`` (whose goal's traffic holds the curve's text and how
    the fleet autoscales), as a recommendation to show and store."""
    from perdollar.ask.fleet_sizing import answer_language_model_fleet
    from perdollar.ask.policy import fleet_policy

    goal = question.goal
    assert isinstance(goal, FleetGoal)
    traffic = goal.traffic
    policy, curve = fleet_policy(traffic), stored_curve(question)
    answer = answer_language_model_fleet(
        question, curve, catalog=catalog, policy=policy, instance_start_s=traffic.instance_start_s,
        progress=progress,
    )  # fmt: skip
    return fleet_recommendation(question, fleet_document(answer, question), catalog)


def _hour_label(start_s: float, is_trace: bool) -> str:
    if is_trace:
        return f"+{start_s / 3600:.1f}h"
    minutes = round(start_s / 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def fleet_document(answer: FleetAnswer, question: Question) -> dict[str, object]:
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

    def summary(fleet: Fleet) -> dict[str, object]:
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


def fleet_recommendation(
    question: Question, document: Mapping[str, object], catalog: Catalog
) -> Recommendation:
    """The fleet's answer as a recommendation to store: no ranked estimates, the figures in ``fleet``."""
    from perdollar.report.fleet_figures import fleet_number, fleet_part, fleet_texts
    from perdollar.select.model import Recommendation

    figures = {key: value for key, value in document.items() if key != "question"}
    notes = tuple(fleet_texts(document, "notes"))
    chosen = fleet_part(document, "fleet")
    explanation = (
        f"A fleet of {' + '.join(fleet_texts(chosen, 'parts'))} serves the day within {document['slo']} for "
        f"{format_money(fleet_number(chosen, 'usd_per_month'))} a month, "
        f"{document['saving_vs_static_peak']:.0%} less than the static peak."
    )
    return Recommendation(
        question=question, estimates=(), pareto=(), explanation=explanation,
        catalog_captured_at=str(catalog.captured_at), catalog_snapshot_id=str(catalog.snapshot_id),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), notes=notes,
        sample_unit="requests", fleet=figures,
    )  # fmt: skip


def fleet_figures(recommendation: Recommendation) -> dict[str, object]:
    """The fleet's answer as :func:`fleet_document` gives it: its question, then its figures."""
    assert recommendation.fleet is not None
    return {"question": recommendation.question, **recommendation.fleet}


def compared(old: Recommendation, new: Recommendation) -> Reevaluation:
    """Whether the chosen fleet changed its parts, and which monthly figures moved."""
    from perdollar.report.changes import Reevaluation
    from perdollar.report.fleet_html import check_fleet_figures

    assert old.fleet is not None and new.fleet is not None
    check_fleet_figures(old.fleet)
    old_parts, new_parts = _parts(old.fleet), _parts(new.fleet)
    reasons = []
    for key, name in (("fleet", "the chosen fleet"), ("static_peak", "the static peak")):
        before, after = old.fleet[key]["usd_per_month"], new.fleet[key]["usd_per_month"]
        if before > 0 and abs(after / before - 1) >= MONTHLY_MOVE_NOTED:
            reasons.append(f"{name} costs {format_money(after)} a month, was {format_money(before)}")
    flipped = old_parts != new_parts
    if flipped:
        reasons.insert(0, f"the fleet is now {new_parts}, was {old_parts}")
    summary = (
        f"the fleet changed: {new_parts}" if flipped
        else f"the same fleet ({new_parts}) at {format_money(new.fleet['fleet']['usd_per_month'])} a month"
    )  # fmt: skip
    return Reevaluation(flipped, old_parts, new_parts, old.catalog_captured_at, new.catalog_captured_at,
                        tuple(reasons), (), summary)  # fmt: skip


def _parts(figures: Mapping[str, object]) -> str:
    from perdollar.report.fleet_figures import fleet_part, fleet_texts

    return " + ".join(fleet_texts(fleet_part(figures, "fleet"), "parts"))
