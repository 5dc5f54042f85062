"""Every numeric option checked where it enters: finite, and inside the range its kind allows.

typer parses ``nan`` and ``inf`` as floats and knows no ranges unless each option declares one,
so a value such as ``--budget nan`` or ``--qps -3`` used to reach the pipeline. Here each numeric
option has a kind, and :func:`harden` gives every int and float option of every command a check
of its kind before the command runs: one line, exit 2, and nothing measured or stored. A text
or path option given as an empty string is refused the same way (``--samples ''`` is no target,
``--out ''`` no folder). The kinds and their checks live in :mod:`perdollar.amounts`, which the
Python API calls too.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from pathlib import Path

import click

from perdollar.amounts import ABOVE_ONE, NON_NEGATIVE, PROBABILITIES, check_value
from perdollar.errors import PerdollarError

__all__ = ["ABOVE_ONE", "NON_NEGATIVE", "PROBABILITIES", "check_value", "harden", "numeric_options"]


def numeric_kind(annotation: object) -> type | None:
    """``int`` or ``float`` for an option typed so (optional or not), else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if candidate in (int, float):
            return typing.cast(type, candidate)
    return None


def _is_text(annotation: object) -> bool:
    """An option typed as text or a path (optional or repeatable or not)."""
    candidates = [annotation, *typing.get_args(annotation)]
    for candidate in list(candidates):
        candidates.extend(typing.get_args(candidate))
    return any(candidate in (str, Path) for candidate in candidates)


# A click option's callback: the parsed value in, the value the command receives out.
Callback = Callable[[click.Context, click.Parameter, object], object]


def _checked(option: str, integer: bool, previous: Callback | None) -> Callback:
    def callback(ctx: click.Context, param: click.Parameter, value: object) -> object:
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


def _refuse_empty(param: click.Parameter) -> None:
    """Make ``param`` refuse an empty value typed by the user, before typing turns it into ``Path('.')``."""
    option = param.opts[0]
    convert = param.process_value

    def process_value(ctx: click.Context, value: object) -> object:
        # Only what the user typed: a default of "" (such as sweep's --install) means "not given".
        # (typer carries its own copy of click: the source is compared by name, not by identity.)
        source = ctx.get_parameter_source(param.name or "")
        if getattr(source, "name", None) == "COMMANDLINE":
            for item in value if isinstance(value, list | tuple) else (value,):
                if isinstance(item, str) and not item.strip():
                    raise PerdollarError(f"{option} is empty", f"give {option} a value, or leave it out")
        return convert(ctx, value)

    param.process_value = process_value  # type: ignore[method-assign]


def text_options(command: click.Command) -> list[click.Parameter]:
    """The text and path options of ``command`` (by the annotations typer built them from)."""
    found = []
    for param in command.params:
        descriptor = getattr(param, "type_descriptor", None)
        opts = getattr(param, "opts", [])
        if descriptor is not None and opts and opts[0].startswith("--") and _is_text(descriptor.annotation):
            found.append(param)
    return found


def harden(command: click.Command) -> None:
    """Give every numeric option of ``command`` and its subcommands the check of its kind, and
    every text option a refusal of the empty string (once)."""
    for param in text_options(command):
        if not getattr(param, "_perdollar_checked", False):
            _refuse_empty(param)
            param._perdollar_checked = True  # type: ignore[attr-defined]
    for param in numeric_options(command):
        if not getattr(param, "_perdollar_checked", False):
            integer = numeric_kind(param.type_descriptor.annotation) is int  # type: ignore[attr-defined]
            param.callback = _checked(param.opts[0], integer, param.callback)
            param._perdollar_checked = True  # type: ignore[attr-defined]
    for sub in getattr(command, "commands", {}).values():
        harden(sub)
