"""select stage: constraints, objectives, ranking, Pareto front, ties and explanations.

It ranks what the price stage priced; asking the whole question is :mod:`perdollar.ask`.
"""

from __future__ import annotations

from perdollar.select.constraints import mark_constraints, reason_text
from perdollar.select.model import Recommendation
from perdollar.select.ranking import (
    DEFAULT_KEEP,
    Selection,
    build_recommendation,
    select_candidates,
)

__all__ = [
    "DEFAULT_KEEP",
    "Recommendation",
    "Selection",
    "build_recommendation",
    "mark_constraints",
    "reason_text",
    "select_candidates",
]
