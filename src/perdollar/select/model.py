"""A recommendation: the ranked answer to one question, with its Pareto front and the why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from perdollar.price.model import Estimate


@dataclass(frozen=True, slots=True)
class Question:
    """Everything that defines the question, so that it can be stored and asked again."""

    workload_name: str
    workload_fingerprint: str
    kind: str  # train | inference
    objective: str  # samples-per-dollar | time | cost | weighted
    target_samples: float | None = None
    deadline_hours: float | None = None
    budget_usd: float | None = None
    market: str = "any"
    clouds: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    max_nodes: int = 1
    options: dict[str, Any] = field(default_factory=dict)  # everything else (weights, SLOs…)


@dataclass(frozen=True, slots=True)
class Recommendation:
    question: Question
    estimates: tuple[Estimate, ...]  # ranked best first; excluded ones after the feasible ones
    pareto: tuple[int, ...]  # indices into estimates
    explanation: str
    catalog_captured_at: str
    catalog_snapshot_id: str
    created_at: str
    ties: tuple[int, ...] = ()  # indices whose bands overlap the top choice's
    notes: tuple[str, ...] = ()
