"""A fleet over a day as a stored recommendation: kept, asked again, written as a report.

The stored question carries the traffic's text (:class:`perdollar.question.FleetTraffic`), so a
fleet can be asked again after its load curve or trace file is gone; the stored answer carries
the fleet's figures as plain data, which ``history reevaluate`` compares and ``report`` draws
(:mod:`perdollar.report.fleet_html`).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from perdollar.cli import common
from perdollar.fmt import format_money
from perdollar.report.changes import Reevaluation

if TYPE_CHECKING:
    from perdollar.ask.inputs import Progress
    from perdollar.ask.language_model_fleet import FleetAnswer
    from perdollar.catalog import Catalog
    from perdollar.price.fleet import FleetPolicy
    from perdollar.question import Question
    from perdollar.select.model import Recommendation
    from perdollar.store.store import StoredRecommendation
    from perdollar.workload.llm.load_curve import LoadCurve

# What a stored fleet is compared by when it is asked again.
HEADLINE_KEYS = ("fleet", "autoscaled_single_type", "static_peak", "saving_vs_static_peak",
                 "replay_slo_met_share")  # fmt: skip
MONTHLY_MOVE_NOTED = 0.005  # a relative move of a monthly cost worth a sentence


def answer_fleet(
    question: Question, curve: LoadCurve, catalog: Catalog, policy: FleetPolicy, instance_start_s: float,
    progress: Progress | None = None,
) -> FleetAnswer:  # fmt: skip
    from perdollar.ask.inputs import quiet
    from perdollar.ask.language_model_fleet import answer_language_model_fleet

    return answer_language_model_fleet(
        question, curve, catalog=catalog, policy=policy, instance_start_s=instance_start_s,
        progress=progress or quiet,
    )  # fmt: skip


def fleet_recommendation(question: Question, document: dict[str, Any], catalog: Catalog) -> Recommendation:
    """The fleet's answer as a recommendation to store: no ranked estimates, the figures in ``fleet``."""
    from perdollar.select.model import Recommendation

    figures = {key: value for key, value in document.items() if key != "question"}
    chosen = document["fleet"]
    explanation = (
        f"A fleet of {' + '.join(chosen['parts'])} serves the day within {document['slo']} for "
        f"{format_money(chosen['usd_per_month'])} a month, "
        f"{document['saving_vs_static_peak']:.0%} less than the static peak."
    )
    return Recommendation(
        question=question, estimates=(), pareto=(), explanation=explanation,
        catalog_captured_at=str(catalog.captured_at), catalog_snapshot_id=str(catalog.snapshot_id),
        created_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), notes=tuple(document["notes"]),
        sample_unit="requests", fleet=figures,
    )  # fmt: skip


def stored_curve(question: Question) -> LoadCurve:
    """The stored question's traffic, read again from the text kept with it."""
    from perdollar.cli.llm_fleet_cmd import parse_traffic

    traffic = question.traffic
    assert traffic is not None
    settings = question.language_model
    lengths = (None, None)
    if traffic.kind == "load-curve" and settings is not None:
        lengths = (settings.input_tokens, settings.output_tokens)
    return parse_traffic(traffic.kind, traffic.text, traffic.source, *lengths,
                         named=f"the stored {traffic.kind} {traffic.source}")  # fmt: skip


def reevaluate_fleet(stored: StoredRecommendation, *, store_url: str | None, store_new: bool,
                     json_output: bool) -> None:  # fmt: skip
    """Ask a stored fleet question again with today's catalog; say what moved."""
    from perdollar.ask.policy import fleet_policy
    from perdollar.catalog import load
    from perdollar.cli.llm_fleet_cmd import fleet_document
    from perdollar.cli.persist import save_recommendation

    old = stored.recommendation  # read back by the caller (perdollar.cli.stored_rows.read_back)
    question, traffic = old.question, old.question.traffic
    assert traffic is not None and old.fleet is not None
    policy, curve = fleet_policy(traffic), stored_curve(question)
    with common.progress(f"re-asking the fleet for {question.workload_name}", quiet=json_output) as bar:
        catalog = load()
        answer = answer_fleet(question, curve, catalog, policy, traffic.instance_start_s,
                              progress=lambda message: bar.update(description=message))  # fmt: skip
    new = fleet_recommendation(question, fleet_document(answer, question), catalog)
    result = compared(old, new)
    new_id = save_recommendation(new, store_url=store_url, enabled=store_new, catalog=catalog)
    if json_output:
        import dataclasses

        assert new.fleet is not None
        common.emit_json({
            "stored_id": stored.id, "new_id": new_id, **dataclasses.asdict(result),
            "old": {key: old.fleet.get(key) for key in HEADLINE_KEYS},
            "new": {key: new.fleet.get(key) for key in HEADLINE_KEYS},
        })  # fmt: skip
        return
    common.console.print(
        f"Fleet {stored.id} ({escape(question.workload_name)}, traffic {escape(traffic.source)}, catalog "
        f"{result.old_captured_at[:10]}) asked again with the catalog of {result.new_captured_at[:10]}:",
        highlight=False,
    )
    common.console.print(f"[bold]{escape(result.summary)}[/]", highlight=False)
    for reason in result.reasons:
        common.console.print(f"  • {escape(reason)}", highlight=False)
    if new_id:
        common.console.print(f"Stored today's answer as {new_id}.", highlight=False)


def compared(old: Recommendation, new: Recommendation) -> Reevaluation:
    """Whether the chosen fleet changed its parts, and which monthly figures moved."""
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


def _parts(figures: dict[str, Any]) -> str:
    return " + ".join(figures["fleet"]["parts"])
