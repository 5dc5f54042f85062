"""A recommendation: the ranked answer to one question, with its Pareto front and the why."""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.price.model import Estimate
from perdollar.question import Question


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
    sample_unit: str = "samples"  # what the rates count: images, sequences, tokens, requests …
