"""The options many commands share, declared once: output on stdout, the step's batch size and
precision, clouds and regions, and the store (:class:`perdollar.cli.declared.StoreChoice`).

A command takes a group with :func:`perdollar.cli.declared.takes`, limited with
:class:`~perdollar.cli.declared.Group` to the scopes it uses, so that each flag has one help text
and one set of choices wherever it appears.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.ask.options import Places, Step
from perdollar.cli.declared import CSV, Group, Output, StoreChoice
from perdollar.errors import PerdollarError
from perdollar.question import declared

__all__ = [
    "BATCH_ONLY",
    "CLOUD_ONLY",
    "CSV",
    "MEASURED",
    "OUTPUT",
    "PLACES",
    "PRECISION_ONLY",
    "REGION_ONLY",
    "STEP",
    "STORE",
    "STORE_URL_ONLY",
    "Measured",
    "Output",
    "Places",
    "Step",
    "StoreChoice",
    "only_one",
]


@dataclass(frozen=True, slots=True)
class Measured:
    """Measurements given in a file, which calibrate the predictions of the workload they measured."""

    measurements: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None,
        "--measurements",
        "Measured throughput to calibrate from: bench JSON or a CSV of the published schema.",
    )


# typer's own panel: a command without panels of its own lists the shared options with the rest.
OPTIONS = "Options"
OUTPUT = Group(Output, panel=OPTIONS)
STEP = Group(Step, panel=OPTIONS)
BATCH_ONLY = Group(Step, ("batch",), panel=OPTIONS)
PRECISION_ONLY = Group(Step, ("precision",), panel=OPTIONS)
PLACES = Group(Places, panel=OPTIONS)
CLOUD_ONLY = Group(Places, ("cloud",), panel=OPTIONS)
REGION_ONLY = Group(Places, ("region",), panel=OPTIONS)
MEASURED = Group(Measured, panel=OPTIONS)
STORE = Group(StoreChoice, panel=OPTIONS)
STORE_URL_ONLY = Group(StoreChoice, (), panel=OPTIONS)  # a command that reads the store it is given


def only_one(values: tuple[str, ...], flag: str) -> str | None:
    """The one value of a shared option that a command takes once (None: not given)."""
    if len(values) > 1:
        raise PerdollarError(
            f"{flag} is given {len(values)} times, and this command takes one",
            f"keep one of {', '.join(values)}",
        )
    return values[0] if values else None
