"""A recommendation: the ranked answer to one question, with its Pareto front and the why."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perdollar.price.model import Estimate
from perdollar.question import Question

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True, slots=True, repr=False)
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
    # A fleet over a day: its answer as plain data (intervals, the three fleets, replay, notes);
    # it has no ranked estimates.
    fleet: dict[str, Any] | None = None

    @property
    def price_dates(self) -> str:
        """The capture dates of the prices the ranked candidates rest on ("2025-11-30 … 2026-05-20"):
        a snapshot mixes sources of different ages, so its own date says little about them."""
        dates = sorted({e.captured_at[:10] for e in self.estimates if e.feasible and e.captured_at})
        if not dates:
            return self.catalog_captured_at[:10]
        return dates[0] if len(dates) == 1 else f"{dates[0]} … {dates[-1]}"

    def to_frame(self) -> pd.DataFrame:
        """Every estimate, ranked best first, one row each; columns carry their units."""
        from perdollar.select.display import estimates_frame

        return estimates_frame(self.estimates, self.sample_unit)

    def __repr__(self) -> str:
        from perdollar.select.display import estimate_line

        feasible = [e for e in self.estimates if e.feasible]
        head = f"Recommendation for {self.question.workload_name!r}: {len(feasible)} feasible"
        head += f" of {len(self.estimates)} candidates (prices of {self.price_dates})"
        lines = [head]
        lines += [f"  {i + 1}. {estimate_line(e, self.sample_unit)}" for i, e in enumerate(feasible[:3])]
        lines.append("  .to_frame() for every row, .explanation for the why")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        from perdollar.select.display import estimates_html

        title = f"perdollar: {self.question.workload_name}, prices of {self.price_dates}"
        return estimates_html(self.to_frame(), title)
