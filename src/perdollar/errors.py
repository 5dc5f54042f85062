"""Errors a user can act on.

Every problem perdollar reports to a person is a :class:`PerdollarError`: one line that names
the thing that is wrong and, separately, how to fix it. The CLI prints it without a traceback
(unless ``--debug``) and exits with :attr:`PerdollarError.exit_code`.
"""

from __future__ import annotations

# Documented exit codes (also listed in `perdollar --help`).
EXIT_OK = 0
EXIT_FAILURE = 1  # the workload ran and failed (crash, out of memory, timeout): a recorded result
EXIT_USAGE = 2  # bad input: unknown name, malformed file, impossible constraint
EXIT_NOTHING_FEASIBLE = 3  # the question is valid but no candidate satisfies it


class PerdollarError(Exception):
    """A problem with the user's input or environment, with the fix."""

    exit_code: int = EXIT_USAGE

    def __init__(self, problem: str, fix: str | None = None, *, exit_code: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.fix = fix
        if exit_code is not None:
            self.exit_code = exit_code

    def one_line(self) -> str:
        return f"{self.problem} — {self.fix}" if self.fix else self.problem

    def __str__(self) -> str:
        return self.one_line()


class NothingFeasibleError(PerdollarError):
    """The question is well formed but no candidate meets its constraints."""

    exit_code = EXIT_NOTHING_FEASIBLE


class PerdollarWarning(UserWarning):
    """Something a person should know that does not stop the command (the CLI prints one line)."""
