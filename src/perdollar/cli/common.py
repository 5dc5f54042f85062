"""Shared pieces of the CLI: consoles, JSON output, progress, option parsing helpers."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from perdollar import amounts
from perdollar.jsonable import to_jsonable

if TYPE_CHECKING:
    from rich.table import Table

    from perdollar.terminal_tables import FittedTable


class ProgressHandle(Protocol):
    """What a command's progress bar takes: steps done, and a new description or count."""

    def advance(self, amount: float = 1) -> None: ...

    def update(self, description: str | None = None, completed: float | None = None) -> None: ...


class _State:
    debug: bool = False
    verbose: bool = False  # --verbose: libraries' logs and long error chains in full
    json_out: TextIO | None = None  # the real stdout while it is kept for the JSON document
    csv: bool = False  # --csv: the JSON document's main table is written as CSV instead


STATE = _State()


# Output that is not a terminal (a file, a pipe into grep or less, CI logs) has no width to fit:
# every table row and every line is written whole, however wide, instead of folded to a guessed
# 80 or 160 columns that would cut figures and names. Rich's own rules say what is a terminal
# (a TTY, or TTY_COMPATIBLE=1 / FORCE_COLOR set); a terminal's width is COLUMNS or its size.
UNLIMITED_WIDTH = 100_000

# Tables and progress go to stderr when --json is requested, so stdout stays machine-readable.
console = Console()
err_console = Console(stderr=True)


def _fit_to_stdout(out: Console) -> None:
    out.__init__()  # type: ignore[misc]
    if not out.is_terminal:
        out.__init__(width=UNLIMITED_WIDTH)  # type: ignore[misc]


_fit_to_stdout(console)


def fresh_consoles() -> None:
    """Both consoles as a new process would make them now: Rich reads the width (COLUMNS) and the
    colour system once, when a console is made, and an embedding process may call main() again
    with another environment. The objects stay the same, so modules that imported them keep them."""
    _fit_to_stdout(console)
    err_console.__init__(stderr=True)  # type: ignore[misc]


def print_table(
    table: Table | FittedTable, *, target: Console | None = None, see_every_column: str | None = None
) -> FittedTable:
    """``table`` (a rich table, or one already fitted) fitted to the terminal: whole columns left
    out rather than a figure or a name cut, and a dim line under it naming what was left out.
    Returns the table as fitted (its ``left_out`` names the columns not shown)."""
    from perdollar.terminal_tables import SEE_EVERY_COLUMN, FittedTable, fit, print_fitted

    out = target or console
    if not isinstance(table, FittedTable):
        table = fit(table, out.width, see_every_column=see_every_column or SEE_EVERY_COLUMN)
    print_fitted(out, table)
    return table


def print_error(message: str) -> None:
    # The message is user data (file names, extras like perdollar[gpu]): never read it as markup.
    err_console.print(f"[bold red]perdollar: error:[/] {escape(message)}", highlight=False, soft_wrap=True)


def print_warning(message: str) -> None:
    err_console.print(f"[yellow]perdollar: warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


VERBOSE_HELP = "Show the libraries' logs and the full story behind an error (otherwise one line)."


def set_verbose(_context: object, _param: object, value: bool) -> bool:
    if value:
        STATE.verbose = True
        held_logs().let_through()
    return value


class HeldLogs(logging.Handler):
    """Python's last-resort log handler while a command runs: what a library logs without any
    configured handler (gpuhunt logs a traceback per provider it cannot download) is held back
    instead of printed, so that a failure reads as perdollar's one line; ``--verbose`` lets it through.
    A program that configures logging itself is untouched (this handler only stands in for none)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.held: list[str] = []
        self.passing = False

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if self.passing:
            sys.stderr.write(text + "\n")
        else:
            self.held.append(text)

    def let_through(self) -> None:
        self.passing = True
        for text in self.held:
            sys.stderr.write(text + "\n")
        self.held.clear()

    def line_count(self) -> int:
        return sum(text.count("\n") + 1 for text in self.held)


_HELD = HeldLogs()


def held_logs() -> HeldLogs:
    return _HELD


@contextmanager
def logs_held() -> Iterator[HeldLogs]:
    """Hold back unconfigured library logs for the length of a command (see :class:`HeldLogs`)."""
    previous = logging.lastResort
    _HELD.held.clear()
    _HELD.passing = STATE.verbose
    logging.lastResort = _HELD
    try:
        yield _HELD
    finally:
        logging.lastResort = previous


def held_note() -> str:
    """ " (--verbose shows …)" when something was held back from the one line; else ""."""
    lines = _HELD.line_count()
    return f" (--verbose shows the {lines} lines of log behind it)" if lines and not STATE.verbose else ""


def emit_json(value: object, *, table: str | None = None) -> None:
    """The command's document on stdout: as JSON, or with ``--csv`` its ``table`` (a dotted key of
    the document's main list; None: the document is one row, or a list of rows) as CSV."""
    out = STATE.json_out or sys.stdout
    document = to_jsonable(value)
    if STATE.csv:
        from perdollar.cli.csv_output import write_csv

        write_csv(document, table, out)
    else:
        out.write(json.dumps(document, indent=2, allow_nan=False) + "\n")
    out.flush()


@contextmanager
def stdout_kept_for_json() -> Iterator[None]:
    """While a ``--json`` command works, everything else written to stdout goes to stderr.

    A workload that prints while it is imported or built, a forked child that inherits the
    descriptor, a C library's message: none of it may land before the JSON document. Both
    Python's ``sys.stdout`` and, where it is the process's, descriptor 1 are pointed at stderr;
    :func:`emit_json` alone writes to the real stdout.
    """
    real = sys.stdout
    saved_fd: int | None = None
    try:
        if real.fileno() == 1:
            real.flush()
            saved_fd = os.dup(1)
            os.dup2(2, 1)
    except (AttributeError, OSError, ValueError):  # a captured or replaced stdout: no descriptor
        saved_fd = None
    json_out = os.fdopen(os.dup(saved_fd), "w", encoding="utf-8") if saved_fd is not None else real
    STATE.json_out = json_out
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stdout = real
        STATE.json_out = None
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
            if saved_fd is not None:
                json_out.close()
        if saved_fd is not None:
            os.dup2(saved_fd, 1)
            os.close(saved_fd)


@contextmanager
def progress(
    description: str, total: float | None = None, *, quiet: bool = False
) -> Iterator[ProgressHandle]:
    """A progress bar on stderr; ``quiet`` (e.g. with ``--json``) still shows it on a TTY only."""
    with Progress(
        SpinnerColumn(),
        # Descriptions carry names from workloads and files: never read them as markup.
        TextColumn("{task.description}", markup=False, style="progress.description"),
        BarColumn(),
        TextColumn("{task.completed:.0f}/{task.total:.0f}" if total else ""),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
        disable=quiet and not err_console.is_terminal,
    ) as bar:
        task = bar.add_task(description, total=total)

        class _Handle:
            def advance(self, amount: float = 1) -> None:
                bar.advance(task, amount)

            def update(self, description: str | None = None, completed: float | None = None) -> None:
                bar.update(task, description=description or bar.tasks[0].description, completed=completed)

        yield _Handle()


def parse_duration_hours(text: str, option: str) -> float:
    """``48h``, ``90m``, ``2d``, ``3600s`` or a bare number of hours → hours."""
    return amounts.duration_hours(text, option)


def parse_count(text: str, option: str) -> float:
    """``1e9``, ``2.5M``, ``10k`` or a plain integer → a positive number."""
    return amounts.count(text, option)
