"""Tables that fit the terminal without cutting a figure or a name, and say what they leave out.

A cell may wrap between words, never inside one; a column that never wraps (a configuration's
name) keeps each of its lines whole. When the terminal is too narrow for every column at that,
whole columns are left out, least important first, and a footnote names them. When even the
columns that are never left out need more than the terminal has, the table is printed at the
width it needs (the terminal folds its lines; nothing is cropped) and the footnote says so.
Output that is not a terminal has no width to fit: the CLI prints every row whole there
(``perdollar.cli.common``).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, RenderableType
from rich.errors import MarkupError
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Column as RichColumn
from rich.table import Table
from rich.text import Text

from perdollar.fmt import least_table_width

# How a footnote tells the user to see every column of a table it fitted.
SEE_EVERY_COLUMN = "every column: a wider terminal, | less -S, or --json/--csv"


class FittingTable(Table):
    """A rich table whose columns each say how readily they give way on a narrow terminal.

    ``drop_order`` 0: always shown; higher numbers are left out first. A column added without
    one is always shown.
    """

    @property
    def drop_orders(self) -> list[int]:
        """Each added column's drop order (kept apart from rich's own state, which it does not know)."""
        orders: list[int] = self.__dict__.setdefault("_drop_orders", [])
        return orders

    # ``settings`` are rich's own column settings, passed on as the caller gave them.
    def add_column(
        self,
        header: RenderableType = "",
        footer: RenderableType = "",
        *,
        drop_order: int = 0,
        **settings: Any,
    ) -> None:
        super().add_column(header, footer, **settings)
        self.drop_orders.append(drop_order)


@dataclass(frozen=True)
class FittedTable:
    table: Table
    left_out: tuple[str, ...]  # headers of the columns the width could not hold
    needed: int = 0  # columns the kept ones need when even they do not fit the width (else 0)
    width: int | None = None  # the width it was fitted to
    see_every_column: str = SEE_EVERY_COLUMN

    @property
    def footnote(self) -> str:
        parts = []
        if self.left_out:
            names = ", ".join(dict.fromkeys(self.left_out))  # a header two columns share, once
            parts.append(f"left out for the terminal's width: {names}")
        if self.needed:
            parts.append(f"the table needs {self.needed} columns, the terminal has {self.width}")
        return f"{'; '.join(parts)} ({self.see_every_column})" if parts else ""


@dataclass(frozen=True)
class _Span:
    least: int  # the narrowest it prints in without splitting a word (a line, if it never wraps)
    natural: int  # its longest line


@functools.cache
def _measuring_console() -> Console:
    return Console(width=100_000)


def _measured(renderable: RenderableType) -> Measurement:
    console = _measuring_console()
    return Measurement.get(console, console.options, renderable)


def _span(column: RichColumn) -> _Span:
    cells = [_measured(cell) for cell in column.cells] or [Measurement(0, 0)]
    header = _measured(column.header)
    widest_line = max(cell.maximum for cell in cells)
    if column.no_wrap:
        # Its header wraps between words to the cells' width (see _layout): only its words count.
        least = max(widest_line, header.minimum)
        return _Span(least, least)
    return _Span(max(max(c.minimum for c in cells), header.minimum), max(widest_line, header.maximum))


def _plain(header: RenderableType) -> str:
    """A header as printed, on one line (``E\\[cost]`` prints as ``E[cost]``)."""
    if isinstance(header, Text):
        text = header.plain
    else:
        try:
            text = Text.from_markup(str(header)).plain
        except MarkupError:
            text = str(header)
    return " ".join(text.split())


def _drop_orders(table: Table) -> list[int]:
    """Each column's drop order: as declared on a FittingTable; else the first column stays and
    the others go from the right."""
    if isinstance(table, FittingTable):
        declared = table.drop_orders
        return [declared[i] if i < len(declared) else 0 for i in range(len(table.columns))]
    return list(range(len(table.columns)))


def _layout(
    table: Table, kept: Sequence[int], spans: dict[int, _Span], widths: dict[int, int] | None
) -> Table:
    """``table`` with only the ``kept`` columns; each fixed at its ``widths`` entry where given."""
    laid = copy.copy(table)
    columns = []
    for position, index in enumerate(kept):
        column = table.columns[index]
        width = widths[index] if widths is not None else column.width
        header = column.header
        if column.no_wrap and isinstance(header, str):
            # A never-wrapped column would otherwise take its header's whole length.
            header = _wrapped(header, spans[index].least)
        laid_out = dataclasses.replace(
            column, _index=position, min_width=spans[index].least, width=width, header=header
        )
        columns.append(laid_out)
    laid.columns = columns
    return laid


def _wrapped(header: str, width: int) -> str:
    return "\n".join(
        textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False) or line
        for line in header.splitlines()
    )


def _needed(table: Table, kept: Sequence[int], spans: dict[int, _Span]) -> int:
    return least_table_width(_layout(table, kept, spans, {i: spans[i].least for i in kept}))


def _capped_widths(table: Table, kept: Sequence[int], spans: dict[int, _Span], width: int) -> dict[int, int]:
    """Each column as wide as it likes, the widest ones capped alike (never below a column's least)
    so that the table fits ``width``: how Rich shares out a narrow terminal, minus its cutting."""

    def widths_at(cap: int) -> dict[int, int]:
        return {i: max(spans[i].least, min(spans[i].natural, cap)) for i in kept}

    low, high = 0, max(spans[i].natural for i in kept)
    while low < high:
        middle = (low + high + 1) // 2
        if least_table_width(_layout(table, kept, spans, widths_at(middle))) <= width:
            low = middle
        else:
            high = middle - 1
    return widths_at(low)


def fit(table: Table, width: int | None, *, see_every_column: str = SEE_EVERY_COLUMN) -> FittedTable:
    """``table`` laid out for a terminal ``width`` wide (None: no limit, every column at its length)."""
    columns = range(len(table.columns))
    spans = {index: _span(table.columns[index]) for index in columns}
    kept = list(columns)
    left_out: list[str] = []
    if width is None:
        return FittedTable(_layout(table, kept, spans, None), (), 0, None, see_every_column)
    orders = _drop_orders(table)
    for index in sorted((i for i in columns if orders[i] > 0), key=lambda i: (-orders[i], -i)):
        if _needed(table, kept, spans) <= width:
            break
        kept.remove(index)
        left_out.append(_plain(table.columns[index].header))
    needed = _needed(table, kept, spans)
    if needed > width:
        laid = _layout(table, kept, spans, {i: spans[i].least for i in kept})
        return FittedTable(laid, tuple(left_out), needed, width, see_every_column)
    natural = least_table_width(_layout(table, kept, spans, {i: spans[i].natural for i in kept}))
    widths = None if natural <= width else _capped_widths(table, kept, spans, width)
    return FittedTable(_layout(table, kept, spans, widths), tuple(left_out), 0, width, see_every_column)


def print_fitted(console: Console, fitted: FittedTable) -> None:
    """The fitted table on ``console``, and its footnote (dim) when it has one."""
    if fitted.needed > console.width:
        # Wider than the terminal even so: printed whole at the width it needs (the terminal folds
        # its lines), never cropped at the edge.
        wide = Console(
            file=console.file, width=fitted.needed, force_terminal=console.is_terminal,
            color_system=console.color_system, no_color=console.no_color,  # type: ignore[arg-type]
        )  # fmt: skip
        wide.print(fitted.table)
    else:
        console.print(fitted.table)
    if fitted.footnote:
        console.print(f"[dim]{escape(fitted.footnote)}[/]", highlight=False)


@dataclass
class Column:
    """One column of a table built cell by cell (the recommendation and comparison tables)."""

    header: str
    justify: str = "left"
    # 0: always shown, never wrapped (the configuration); higher numbers are left out first.
    drop_order: int = 0
    cells: list[str] = field(default_factory=list)
    # An always-shown column whose cells may wrap between words (a reason, a sentence).
    wraps: bool = False

    @property
    def essential(self) -> bool:
        return self.drop_order == 0


def fitted_table(title: str | None, columns: Sequence[Column], width: int | None) -> FittedTable:
    """The table with every essential column whole, dropping droppable ones until it fits ``width``.

    A droppable column may wrap between words; one is left out only when the table cannot fit
    even with every kept column wrapped that far. Essential columns never wrap, unless they
    say they may (``wraps``).
    """
    table = FittingTable(title=title, header_style="bold", title_justify="left")
    for column in columns:
        table.add_column(
            column.header,
            justify=column.justify,
            no_wrap=column.essential and not column.wraps,
            overflow="fold",
            drop_order=column.drop_order,
        )
    rows = max((len(c.cells) for c in columns), default=0)
    for index in range(rows):
        table.add_row(*(c.cells[index] if index < len(c.cells) else "" for c in columns))
    return fit(table, width)
