"""The Python API's arguments, checked as the command line checks its options.

``perdollar.recommend("mlp", samples=-1)`` must be refused as ``perdollar recommend mlp --samples -1``
is: both go through :mod:`perdollar.amounts`, and both raise the same one-line
:class:`~perdollar.errors.PerdollarError`. A count or a duration may be given as a number or in the
command line's words (``samples="250M"``, ``deadline_hours="3d"``).
"""

from __future__ import annotations

from dataclasses import dataclass

from perdollar import amounts
from perdollar.errors import PerdollarError


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    """A question's target and limits, checked."""

    samples: float | None
    deadline_hours: float | None
    budget_usd: float | None
    confidence: float


def checked_target(
    *,
    samples: object = None,
    epochs: object = None,
    dataset_size: object = None,
    deadline_hours: object = None,
    budget_usd: object = None,
    confidence: object = 0.9,
) -> CheckedTarget:
    """The target of a question (samples, or epochs × dataset_size) and its limits, or the error."""
    target = amounts.count(samples, "samples") if samples is not None else None
    if epochs is not None:
        amounts.check_value("epochs", epochs)
        if samples is not None:
            raise PerdollarError("give samples or epochs, not both", "drop one of them")
        if dataset_size is None:
            raise PerdollarError("epochs needs dataset_size", "add dataset_size=N (samples per epoch)")
        target = float(epochs) * amounts.count(dataset_size, "dataset_size")  # type: ignore[arg-type]
    elif dataset_size is not None:
        raise PerdollarError("dataset_size needs epochs", "add epochs=E")
    deadline = None if deadline_hours is None else amounts.duration_hours(deadline_hours, "deadline_hours")
    amounts.optional(budget_usd, "budget_usd")
    amounts.check_value("confidence", confidence)
    return CheckedTarget(
        samples=target,
        deadline_hours=deadline,
        budget_usd=float(budget_usd) if budget_usd is not None else None,  # type: ignore[arg-type]
        confidence=float(confidence),  # type: ignore[arg-type]
    )
