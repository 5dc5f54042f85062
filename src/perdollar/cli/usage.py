"""Mistakes on the command line itself (a malformed number, an unknown option, a missing
argument) reported like every other bad input: one line, the fix, exit code 2.

The option parser raises its own exception classes. Newer typer releases ship a private copy
of click whose exceptions do not derive from ``click.ClickException``, so the base class is
found through typer's public ``BadParameter`` and both are recognised.
"""

from __future__ import annotations

import click
import typer

from perdollar.cli import common
from perdollar.errors import EXIT_USAGE


def _click_exception_base(exception_class: type[BaseException]) -> type[Exception]:
    for base in exception_class.__mro__:
        if base.__name__ == "ClickException" and issubclass(base, Exception):
            return base
    return click.ClickException


USAGE_ERRORS: tuple[type[Exception], ...] = tuple(
    dict.fromkeys((click.ClickException, _click_exception_base(typer.BadParameter)))
)


def usage_error_line(error: Exception) -> str:
    """One line: what is wrong — the help of the command that explains the option."""
    problem = " ".join(error.format_message().split()).rstrip(".")  # type: ignore[attr-defined]
    context = getattr(error, "ctx", None)
    command_path = getattr(context, "command_path", None) or "perdollar"
    return f"{problem} — see `{command_path} --help`"


def report_usage_error(error: Exception) -> int:
    """Print the error for a person and return the exit code."""
    if type(error).__name__ == "NoArgsIsHelpError":
        # A command run without its arguments shows its help (rich prints it while it is built,
        # plain click returns it as the message) and exits as a usage mistake, as click does.
        help_text = error.format_message()  # type: ignore[attr-defined]
        if help_text:
            common.err_console.print(help_text, highlight=False, markup=False)
        return EXIT_USAGE
    common.print_error(usage_error_line(error))
    code = getattr(error, "exit_code", EXIT_USAGE)
    return code if isinstance(code, int) and code else EXIT_USAGE
