"""Tables that fit the terminal without cutting the answer.

The configuration names what a user types next (``compare``, ``export``), so its column is never
wrapped or shortened with an ellipsis; when the terminal is too narrow, secondary columns are
left out first, in the order the table declares, and a footnote says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.table import Table

# A column's frame in a rich table with the default box: one border and one space either side.
COLUMN_CHROME = 3


@dataclass
class Column:
    header: str
    justify: str = "left"
    # 0: always shown, never wrapped (the configuration); higher numbers are left out first.
    drop_order: int = 0
    cells: list[str] = field(default_factory=list)

    @property
    def natural_width(self) -> int:
        lines = [line for cell in self.cells for line in cell.splitlines()] or [""]
        header_words = self.header.replace("\n", " ").split() or [""]
        return max(max(cell_len(line) for line in lines), max(cell_len(w) for w in header_words))

    @property
    def least_width(self) -> int:
        """The narrowest it may wrap to without splitting a word: an essential column never wraps."""
        if self.essential:
            return self.natural_width
        words = [w for text in (self.header, *self.cells) for w in text.split()] or [""]
        return max(cell_len(word) for word in words)

    @property
    def essential(self) -> bool:
        return self.drop_order == 0


@dataclass(frozen=True)
class FittedTable:
    table: Table
    left_out: tuple[str, ...]  # headers of the columns the width could not hold

    @property
    def footnote(self) -> str:
        if not self.left_out:
            return ""
        names = ", ".join(header.replace("\n", " ") for header in self.left_out)
        return f"left out for the terminal's width: {names} (widen it, or use --json)"


def _total(columns: Sequence[Column]) -> int:
    return sum(c.least_width + COLUMN_CHROME for c in columns) + 1


def fitted_table(title: str | None, columns: Sequence[Column], width: int | None) -> FittedTable:
    """The table with every essential column whole, dropping droppable ones until it fits ``width``.

    A droppable column may wrap between words; one is left out only when the table cannot fit
    even with every kept column wrapped that far. Essential columns never wrap: on a terminal
    too narrow even for them, the lines run long rather than cutting a name.
    """
    kept = list(columns)
    left_out: list[str] = []
    if width is not None:
        for column in sorted((c for c in columns if not c.essential), key=lambda c: -c.drop_order):
            if _total(kept) <= width:
                break
            kept.remove(column)
            left_out.append(column.header)
    table = Table(title=title, header_style="bold", title_justify="left")
    for column in kept:
        if column.essential:
            table.add_column(
                column.header,
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
    return FittedTable(table, tuple(left_out))
