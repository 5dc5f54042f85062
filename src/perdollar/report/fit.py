"""Tables that fit the terminal without cutting the answer, and say what they leave out.

The configuration names what a user types next (``compare``, ``export``), so its column is never
wrapped or shortened with an ellipsis; when the terminal is too narrow, secondary columns are
left out first, in the order the table declares, and a footnote says which. Any other table is
printed whole when the terminal holds its narrowest layout (every cell wrapped between words);
when it cannot, :func:`perdollar.fmt.cut_note` says so in one line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.errors import MarkupError
from rich.table import Table
from rich.text import Text

from perdollar.fmt import least_table_width

# A column's frame in a rich table with the default box: one border and one space either side.
COLUMN_CHROME = 3


@dataclass
class Column:
    header: str
    justify: str = "left"
    # 0: always shown, never wrapped (the configuration); higher numbers are left out first.
    drop_order: int = 0
    cells: list[str] = field(default_factory=list)
    # An always-shown column whose cells may wrap between words (a reason, a sentence).
    wraps: bool = False

    @property
    def natural_width(self) -> int:
        lines = [line for cell in self.cells for line in cell.splitlines()] or [""]
        header_words = _shown(self.header).replace("\n", " ").split() or [""]
        return max(max(cell_len(_shown(line)) for line in lines), max(cell_len(w) for w in header_words))

    @property
    def least_width(self) -> int:
        """The narrowest it may wrap to without splitting a word: an essential column never wraps."""
        if self.essential and not self.wraps:
            return self.natural_width
        words = [w for text in (self.header, *self.cells) for w in _shown(text).split()] or [""]
        return max(cell_len(word) for word in words)

    @property
    def essential(self) -> bool:
        return self.drop_order == 0


def _shown(markup: str) -> str:
    """The text Rich prints for ``markup`` (``E\\[cost]`` prints as ``E[cost]``)."""
    try:
        return Text.from_markup(markup).plain
    except MarkupError:
        return markup


@dataclass(frozen=True)
class FittedTable:
    table: Table
    left_out: tuple[str, ...]  # headers of the columns the width could not hold
    needed: int = 0  # columns the kept ones need when even they do not fit the width (else 0)

    @property
    def footnote(self) -> str:
        parts = []
        if self.left_out:
            names = ", ".join(header.replace("\n", " ") for header in self.left_out)
            parts.append(f"left out for the terminal's width: {names}")
        if self.needed:
            parts.append(f"cells cut for the terminal's width (the table needs {self.needed} columns)")
        return f"{'; '.join(parts)} (widen it, or use --json)" if parts else ""


def _total(columns: Sequence[Column]) -> int:
    return sum(c.least_width + COLUMN_CHROME for c in columns) + 1


def fitted_table(title: str | None, columns: Sequence[Column], width: int | None) -> FittedTable:
    """The table with every essential column whole, dropping droppable ones until it fits ``width``.

    A droppable column may wrap between words; one is left out only when the table cannot fit
    even with every kept column wrapped that far. Essential columns never wrap: on a terminal
    too narrow even for them, the footnote says how many columns the table needs.
    """
    kept = list(columns)
    left_out: list[str] = []
    table = _table(title, columns, kept)
    if width is not None:
        for column in sorted((c for c in columns if not c.essential), key=lambda c: -c.drop_order):
            if max(_total(kept), least_table_width(table)) <= width:
                break
            kept.remove(column)
            left_out.append(column.header)
            table = _table(title, columns, kept)
    needed = least_table_width(table)
    return FittedTable(table, tuple(left_out), needed if width is not None and needed > width else 0)


def _table(title: str | None, columns: Sequence[Column], kept: Sequence[Column]) -> Table:
    table = Table(title=title, header_style="bold", title_justify="left")
    for column in kept:
        if column.essential and not column.wraps:
            table.add_column(
                # The header wraps between words to the cells' width: a never-wrapped column
                # would otherwise take its header's whole length and push the others off.
                _wrapped_header(column.header, column.natural_width),
                justify=column.justify,  # type: ignore[arg-type]
                no_wrap=True,
                min_width=column.natural_width,
            )
        else:
            table.add_column(
                column.header,
                justify=column.justify,  # type: ignore[arg-type]
                min_width=column.least_width,
                overflow="fold",
            )
    rows = max((len(c.cells) for c in columns), default=0)
    for index in range(rows):
        table.add_row(*(c.cells[index] if index < len(c.cells) else "" for c in kept))
    return table


def _wrapped_header(header: str, width: int) -> str:
    return "\n".join(
        textwrap.fill(line, width, break_long_words=False, break_on_hyphens=False)
        for line in header.splitlines()
    )
