"""A stored recommendation read back as ``report`` and ``history reevaluate`` use it.

The store decodes a row's payload; this asks the rest of what those commands need of it: every
field of its question of the type it declares, its settings passing the checks typed options pass
(:func:`perdollar.ask.policy.check_policy`), and for a fleet over a day its traffic read again
and the figures its page draws and its comparison reads. ``history --check`` runs the same
reading on every row, so that a row it passes is one the other commands can read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perdollar.errors import PerdollarError

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
    from perdollar.ask.policy import check_policy
    from perdollar.cli.fleet_history import stored_curve
    from perdollar.report.fleet_html import check_fleet_figures
    from perdollar.store.codec import mistyped

    recommendation = stored.recommendation
    question = recommendation.question
    wrong = mistyped(question, "question.")
    if wrong is not None:
        return wrong
    try:
        check_policy(question)
        if question.traffic is not None:
            if recommendation.fleet is None:
                return "a fleet question without its fleet's figures"
            stored_curve(question)
        if recommendation.fleet is not None:
            if question.traffic is None:
                return "a fleet without the traffic it was sized for"
            check_fleet_figures(recommendation.fleet)
    except PerdollarError as error:
        return error.problem
    return None
