"""``--help`` laid out so that an option's name is never cut.

typer prints each panel of options as a rich table that shares the width between the names, their
types and their help; on a narrow terminal rich shortens the widest columns alike, names included
(``--activation-chec…``). A name is what the user types, so its column keeps its length and the
help wraps in the width that is left.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager

import click
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.style import StyleType
from rich.table import Table
from rich.text import Text


class _OptionsTable(Table):
    """typer's table of options: the columns before the type and the help stay on one line, and
    a column no option fills (short names, "--no-" forms) takes no room."""

    def add_row(
        self, *renderables: RenderableType | None, style: StyleType | None = None, end_section: bool = False
    ) -> None:
        columns_made_here = not self.columns  # typer adds the options table's columns row by row
        super().add_row(*renderables, style=style, end_section=end_section)
        if columns_made_here:
            for column in self.columns[:-2]:  # the required mark and the option's names
                column.no_wrap = True

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        filled = [column for column in self.columns if any(_shows(cell) for cell in column.cells)]
        if len(filled) == len(self.columns):
            yield from super().__rich_console__(console, options)
            return
        table = copy.copy(self)
        table.columns = [dataclasses.replace(c, _index=i) for i, c in enumerate(filled)]
        yield from table.__rich_console__(console, options)


def _shows(cell: object) -> bool:
    return bool(cell.plain if isinstance(cell, Text) else str(cell))


@contextmanager
def _names_kept_whole() -> Iterator[None]:
    from typer import rich_utils

    tables = rich_utils.Table
    rich_utils.Table = _OptionsTable  # type: ignore[misc]
    try:
        yield
    finally:
        rich_utils.Table = tables  # type: ignore[misc]


def keep_option_names_whole(command: click.Command) -> None:
    """``command``'s help, printed with its option names whole."""
    format_help = command.format_help

    def laid_out(context: click.Context, formatter: click.HelpFormatter) -> None:
        with _names_kept_whole():
            format_help(context, formatter)

    # mypy checks a method replaced on one object against the class's unbound method, self and all.
    command.format_help = laid_out  # type: ignore[method-assign, assignment]
