"""``history reevaluate`` of a fleet over a day: asked again through :func:`perdollar.ask.answer`
from the traffic stored with its question (:mod:`perdollar.ask.fleet`), and what moved said."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from perdollar.cli import common
from perdollar.goals import FleetGoal

if TYPE_CHECKING:
    from perdollar.store.store import StoredRecommendation


def reevaluate_fleet(stored: StoredRecommendation, *, store_url: str | None, store_new: bool,
                     json_output: bool) -> None:  # fmt: skip
    """Ask a stored fleet question again with today's catalog; say what moved."""
    from perdollar.ask import answer
    from perdollar.ask.fleet import HEADLINE_KEYS, compared
    from perdollar.cli.persist import save_recommendation

    old = stored.recommendation  # read back by the caller (perdollar.cli.stored_rows.read_back)
    question, goal = old.question, old.question.goal
    assert isinstance(goal, FleetGoal) and old.fleet is not None
    traffic = goal.traffic
    with common.progress(f"re-asking the fleet for {question.workload_name}", quiet=json_output) as bar:
        new = answer(question, progress=lambda message: bar.update(description=message))
    result = compared(old, new)
    new_id = save_recommendation(new, store_url=store_url, enabled=store_new)
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
