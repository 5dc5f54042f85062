"""Options whose value is already what typer would make of it skip typer's conversion.

typer converts every option's value through a validator it builds on first use, even a value that
is absent (None) or already of the option's plain type (a text option's text, a default int). On
``recommend``, whose options number about seventy, building those validators (and importing the
library they come from) took a tenth to a fifth of a second of a two-second answer, for values that
come out unchanged. Here an option whose value provably comes out unchanged returns it directly;
every other value (of another type, outside its range, for an option with a parser or a file
type, or missing where required) goes through typer as before. Where typer's parameters do not
look as expected, nothing is changed.
"""

from __future__ import annotations

from typing import get_origin

import click

_PLAIN_TYPES = (str, int, float)
_UNCHANGED = object()  # "convert as typer would": the value is not provably unchanged


def _in_range(info: object, value: float) -> bool:
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    return (low is None or value >= low) and (high is None or value <= high)


def _as_converted(param: click.Parameter, value: object) -> object:
    """What typer's conversion makes of ``value`` where that is known without it, else _UNCHANGED."""
    descriptor = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    if descriptor is None or info is None or getattr(descriptor, "file_annotation", None) is not None:
        return _UNCHANGED
    if getattr(info, "parser", None) is not None:
        return _UNCHANGED
    multiple = bool(getattr(param, "multiple", False)) or getattr(param, "nargs", 1) == -1
    annotation = descriptor.annotation
    if value is None:
        # Absent: typer gives () for a repeatable option; a required one must fail as typer fails it.
        return _UNCHANGED if getattr(param, "required", True) else (() if multiple else None)
    if multiple:
        if getattr(param, "required", True):
            return _UNCHANGED
        # Nothing repeated: a list option's conversion builds an empty list.
        empty_list = isinstance(value, list | tuple) and not value and get_origin(annotation) is list
        return [] if empty_list else _UNCHANGED
    if annotation not in _PLAIN_TYPES or type(value) is not annotation:
        return _UNCHANGED
    # Text is never checked; a number is checked against its range (and clamped into it).
    in_range = isinstance(value, int | float) and _in_range(info, value)  # a number: int or float
    return value if annotation is str or in_range else _UNCHANGED


def _skipping(param: click.Parameter) -> None:
    convert = param.process_value

    def process_value(ctx: click.Context, value: object) -> object:
        converted = _as_converted(param, value)
        if converted is _UNCHANGED:
            return convert(ctx, value)
        return param.callback(ctx, param, converted) if param.callback is not None else converted

    param.process_value = process_value  # type: ignore[method-assign]
    param._perdollar_plain = True  # type: ignore[attr-defined]


def _with_plain_help(command: click.Command) -> None:
    """The help option is made when first asked for: it skips too (its value is None unless given)."""
    make_help = getattr(command, "get_help_option", None)
    if make_help is None:
        return

    def get_help_option(ctx: click.Context) -> click.Option | None:
        option = make_help(ctx)
        fresh = option is not None and not hasattr(option, "_perdollar_plain")
        if fresh and hasattr(option, "type_descriptor"):
            _skipping(option)
        return option

    command.get_help_option = get_help_option  # type: ignore[method-assign]


def skip_needless_conversion(command: click.Command) -> None:
    """Let every option of ``command`` and its subcommands skip a conversion that changes nothing."""
    for param in command.params:
        if hasattr(param, "type_descriptor") and not hasattr(param, "_perdollar_plain"):
            _skipping(param)
    _with_plain_help(command)
    for sub in getattr(command, "commands", {}).values():
        skip_needless_conversion(sub)
