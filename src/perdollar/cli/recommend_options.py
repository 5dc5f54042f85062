"""What ``recommend`` shows and where else it goes; the options that make up its question are
declared in :mod:`perdollar.ask.options` (and named here too, where the commands take them from).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.ask.options import PRECISION_HELP, Goal, Serving, Shape, Target, Where
from perdollar.question import declared

__all__ = ["PRECISION_HELP", "Goal", "LocalRun", "Serving", "Shape", "Shown", "Target", "Where"]


@dataclass(frozen=True, slots=True)
class LocalRun:
    """Whether the workload is measured on this machine first, to calibrate the ranking's predictions."""

    measure: bool = declared(False, "--measure", "Benchmark locally first and calibrate from it.")


@dataclass(frozen=True, slots=True)
class Shown:
    """What the answer shows, and where else it goes (--json: :class:`perdollar.cli.declared.Output`)."""

    top: int = declared(10, "--top", "Rows to show.")
    show_excluded: bool = declared(False, "--show-excluded", "Also list excluded candidates and why.")
    report: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--report", "Also write an HTML report to this file."
    )
