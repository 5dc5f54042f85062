"""A stored recommendation read back as ``report`` and ``history reevaluate`` use it.

The store decodes a row's payload; this asks the rest of what those commands need of it: every
field of its question of the type it declares, its settings passing the checks typed options pass
(:func:`perdollar.ask.policy.check_policy`), and for a fleet over a day its traffic read again
and the figures its page draws and its comparison reads. ``history --check`` runs the same
reading on every row, so that a row it passes is one the other commands can read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from perdollar.cli.common import console, emit_json, err_console, print_table
from perdollar.errors import EXIT_FAILURE, PerdollarError

if TYPE_CHECKING:
    from perdollar.store.store import StoredRecommendation

DAMAGED_FIX = (
    "`perdollar history --check` lists every damaged row; ask the question afresh with perdollar recommend"
)


def read_back(stored: StoredRecommendation) -> StoredRecommendation:
    """``stored``, or a one-line error saying why the row cannot be used."""
    problem = damage(stored)
    if problem is not None:
        raise PerdollarError(f"stored row {stored.id} is damaged: {problem}", DAMAGED_FIX)
    return stored


def damage(stored: StoredRecommendation) -> str | None:
    """What is wrong with a decoded row, in a few words; None when it can be reported and asked again."""
    from perdollar.ask.fleet import stored_curve
    from perdollar.ask.policy import check_objective, check_policy
    from perdollar.goals import FleetGoal
    from perdollar.report.fleet_html import check_fleet_figures
    from perdollar.store.codec import mistyped, mistyped_goal

    recommendation = stored.recommendation
    question = recommendation.question
    fleet = isinstance(question.goal, FleetGoal)
    wrong = mistyped(question, "question.")
    if wrong is not None:
        return wrong
    try:
        check_objective(question)  # before the goal's types: an objective is refused as --objective is
        wrong = mistyped_goal(question.goal)
        if wrong is not None:
            return wrong
        check_policy(question)
        if fleet:
            if recommendation.fleet is None:
                return "a fleet question without its fleet's figures"
            stored_curve(question)
        if recommendation.fleet is not None:
            if not fleet:
                return "a fleet without the traffic it was sized for"
            check_fleet_figures(recommendation.fleet)
    except PerdollarError as error:
        return error.problem
    return None


def check_rows(store_url: str | None, json_output: bool) -> None:
    """Read every stored row back as the commands that use it do; name those that cannot be (a row
    whose payload does not decode is skipped everywhere else, one that decodes but cannot be
    reported or asked again is refused)."""
    from perdollar.store import open_store
    from perdollar.store.damage import DamagedRow

    with open_store(store_url, create=False) as store:
        damaged, where = store.damaged_rows(), store.display_url
        decoded = store.readable_recommendations()
    listed = {row.id for row in damaged}
    for stored in decoded:
        problem = None if stored.id in listed else damage(stored)
        if problem is not None:
            damaged.append(DamagedRow("recommendation", stored.id, problem))
    if json_output:
        emit_json({"store": where, "damaged": damaged}, table="damaged")
    elif not damaged:
        console.print(f"Every stored row of {escape(where)} reads back.", highlight=False)
    else:
        table = Table(title=f"Damaged rows in {escape(where)}", title_justify="left")
        for column in ("kind", "id", "why it cannot be read"):
            table.add_column(column, overflow="fold")
        for row in damaged:
            table.add_row(row.kind, escape(row.id), escape(row.reason))
        print_table(table)
        err_console.print(
            f"{len(damaged)} damaged row(s): other commands skip them with a warning or refuse them; "
            "delete them with an SQL client if they are of no use",
            highlight=False,
        )
    if damaged:
        raise typer.Exit(EXIT_FAILURE)
