"""Reading snapshot CSV files row by row, with errors that name the file, the row and the value."""

from __future__ import annotations

import csv
import gzip
import io
import math
import zlib
from collections.abc import Iterator
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.vocabulary import Word, checked_word

REBUILD_FIX = "rebuild it (python -m perdollar.catalog.build DATA_DIR) or delete the snapshot folder"


class Rows:
    """Rows of one CSV file with the context needed for one-line errors."""

    def __init__(self, path: Path, required: tuple[str, ...]) -> None:
        self.path = path
        self.required = required

    header: list[str]

    def __iter__(self) -> Iterator[tuple[int, dict[str, str]]]:
        for number, cells in self.cells():
            yield number, dict(zip(self.header, cells, strict=True))

    def cells(self) -> Iterator[tuple[int, list[str]]]:
        """Rows as lists in header order (the fast path; ``self.header`` names the columns)."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            raise PerdollarError(f"catalog file {self.path} is missing", REBUILD_FIX) from None
        try:
            text = gzip.decompress(raw).decode() if self.path.suffix == ".gz" else raw.decode()
        except (EOFError, OSError, zlib.error, UnicodeDecodeError) as error:
            raise PerdollarError(
                f"catalog file {self.path} is truncated or corrupt ({error})", REBUILD_FIX
            ) from None
        reader = csv.reader(io.StringIO(text))
        header = self.header = next(reader, [])
        missing = [c for c in self.required if c not in header]
        if missing:
            raise PerdollarError(
                f"catalog file {self.path} lacks column(s) {', '.join(missing)}", REBUILD_FIX
            )
        width = len(header)
        for number, cells in enumerate(reader, start=2):  # row 1 is the header
            if len(cells) != width:
                raise PerdollarError(
                    f"catalog file {self.path} row {number} has {len(cells)} fields, not {width}",
                    REBUILD_FIX,
                )
            yield number, cells

    def fail(self, number: int, column: str, value: str, why: str) -> PerdollarError:
        return PerdollarError(f"catalog file {self.path} row {number}: {column} {value!r} {why}", REBUILD_FIX)


def number_cell(
    rows: Rows,
    number: int,
    row: dict[str, str],
    column: str,
    *,
    optional: bool = False,
    minimum: float | None = 0.0,
) -> float:
    value = row[column].strip()
    if value == "":
        if optional:
            return math.nan
        raise rows.fail(number, column, value, "is empty")
    try:
        parsed = float(value)
    except ValueError:
        raise rows.fail(number, column, value, "is not a number") from None
    if math.isnan(parsed):
        if optional:
            return parsed
        raise rows.fail(number, column, value, "is not a number")
    if minimum is not None and parsed < minimum:
        raise rows.fail(number, column, value, f"is below {minimum:g}")
    return parsed


def optional(value: float) -> float | None:
    return None if math.isnan(value) else value


def choice_cell(rows: Rows, number: int, row: dict[str, str], column: str, allowed: tuple[Word, ...]) -> Word:
    value = row[column].strip()
    try:
        return checked_word(value, allowed)
    except ValueError:
        raise rows.fail(number, column, value, f"is not one of {', '.join(allowed)}") from None
