"""A Recommendation as plain JSON-ready data (the ``--json`` shape of ``recommend``)."""

from __future__ import annotations

from perdollar.jsonable import to_jsonable
from perdollar.select.model import Recommendation


def recommendation_to_dict(recommendation: Recommendation) -> dict[str, object]:
    """``estimates`` (ranked: feasible first, each with its ``label`` and ``feasible``),
    ``pareto`` and ``ties`` (indices into ``estimates``), ``explanation``,
    ``catalog_captured_at``, the question, notes."""
    from perdollar.catalog.price_age import is_stale, price_age_days

    estimates = []
    for estimate in recommendation.estimates:
        record = to_jsonable(estimate)
        record["feasible"] = estimate.feasible
        # each price's own capture date (a snapshot mixes sources of different ages)
        record["price_captured_at"] = estimate.captured_at or None
        record["price_age_days"] = price_age_days(estimate.captured_at, recommendation.created_at)
        record["price_stale"] = is_stale(estimate.captured_at, recommendation.created_at)
        estimates.append(record)
    return {
        "question": to_jsonable(recommendation.question),
        "estimates": estimates,
        "pareto": list(recommendation.pareto),
        "ties": list(recommendation.ties),
        "explanation": recommendation.explanation,
        "catalog_captured_at": recommendation.catalog_captured_at,
        "catalog_snapshot_id": recommendation.catalog_snapshot_id,
        "created_at": recommendation.created_at,
        "notes": list(recommendation.notes),
    }
