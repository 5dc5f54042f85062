"""Every numeric option checked where it enters: finite, and inside the range its kind allows.

typer parses ``nan`` and ``inf`` as floats and knows no ranges unless each option declares one,
so a value such as ``--budget nan`` or ``--qps -3`` used to reach the pipeline. Here each numeric
option has a kind, and :func:`harden` gives every int and float option of every command a check
of its kind before the command runs: one line, exit 2, and nothing measured or stored.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from typing import Any

import click

from perdollar.errors import PerdollarError

# Kinds by option name; an int or float option not named here must be positive.
NON_NEGATIVE = {
    "--checkpoint-seconds", "--restart-minutes", "--max-wait-ms", "--min-accelerator-memory",
    "--min-accelerators", "--min-vcpus", "--min-memory", "--data-bytes-per-sample", "--top",
}  # fmt: skip
PROBABILITIES = {"--confidence", "--deadline-confidence"}
ABOVE_ONE = {"--growth"}  # a factor each step multiplies by


def numeric_kind(annotation: Any) -> type | None:
    """``int`` or ``float`` for an option typed so (optional or not), else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if candidate in (int, float):
            return typing.cast(type, candidate)
    return None


def check_value(option: str, value: float, *, integer: bool = False) -> None:
    """Raise the one-line error for ``value`` of ``option`` if its kind does not allow it."""
    example = f"e.g. {option} {_example(option)}"
    if isinstance(value, float) and not math.isfinite(value):
        raise PerdollarError(f"{option} must be a finite number, got {value}", f"give {example}")
    if option in PROBABILITIES:
        if not 0 < value < 1:
            raise PerdollarError(f"{option} is a probability between 0 and 1, got {value:g}", example)
    elif option in ABOVE_ONE:
        if value <= 1:
            raise PerdollarError(f"{option} must be above 1, got {value:g}", example)
    elif value < 0:
        raise PerdollarError(f"{option} cannot be negative, got {value:g}", example)
    elif value == 0 and option not in NON_NEGATIVE:
        what = "a positive integer" if integer else "positive"
        raise PerdollarError(f"{option} must be {what}, got {value:g}", example)


def _example(option: str) -> str:
    return "0.9" if option in PROBABILITIES else "2" if option in ABOVE_ONE else "10"


def _checked(option: str, integer: bool, previous: Callable[..., Any] | None) -> Callable[..., Any]:
    def callback(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None and not isinstance(value, bool):
            for item in value if isinstance(value, list | tuple) else (value,):
                check_value(option, item, integer=integer)
        return previous(ctx, param, value) if previous is not None else value

    return callback


def numeric_options(command: click.Command) -> list[click.Parameter]:
    """The int and float options of ``command`` (by the annotations typer built them from)."""
    found = []
    for param in command.params:
        descriptor = getattr(param, "type_descriptor", None)
        opts = getattr(param, "opts", [])
        if (
            descriptor is not None
            and opts
            and opts[0].startswith("--")
            and numeric_kind(descriptor.annotation)
        ):
            found.append(param)
    return found


def harden(command: click.Command) -> None:
    """Give every numeric option of ``command`` and its subcommands the check of its kind (once)."""
    for param in numeric_options(command):
        if not getattr(param, "_perdollar_checked", False):
            integer = numeric_kind(param.type_descriptor.annotation) is int  # type: ignore[attr-defined]
            param.callback = _checked(param.opts[0], integer, param.callback)  # type: ignore[attr-defined]
            param._perdollar_checked = True  # type: ignore[attr-defined]
    for sub in getattr(command, "commands", {}).values():
        harden(sub)
