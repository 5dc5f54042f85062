"""select stage: candidates, objectives, ranking, Pareto front and explanations.

Example: ``recommend("vit-b16", samples=1e9, deadline_hours=72, max_nodes=4).estimates[0].label``
is the best configuration by samples per dollar that finishes by the deadline; ``answer(question)``
asks a stored :class:`Question` again.
"""

from __future__ import annotations

from perdollar.select.model import Question, Recommendation
from perdollar.select.recommend import answer, recommend

__all__ = ["Question", "Recommendation", "answer", "recommend"]
