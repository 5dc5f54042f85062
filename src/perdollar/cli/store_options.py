"""The options of ``perdollar history``, ``history reevaluate``, ``report`` and ``check``, declared
once here and generated onto those commands by :func:`perdollar.cli.declared.takes`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.question import declared
from perdollar.vocabulary import StoredKind


@dataclass(frozen=True, slots=True)
class HistoryFilter:
    """Which stored rows ``history`` lists, or that it checks every row reads back instead."""

    workload: str | None = declared(
        None, "--workload", "Only this workload (name or fingerprint prefix).", short="-w"
    )
    kind: StoredKind | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None, "--kind", "Only 'measurement' or 'recommendation' rows."
    )
    limit: int = declared(50, "--limit", "Show at most this many rows.", minimum=1, short="-n")
    check: bool = declared(
        False, "--check", "List stored rows that cannot be read back; exit 1 if there are any."
    )


@dataclass(frozen=True, slots=True)
class Reevaluation:
    """Whether today's answer to a stored question is stored, and whether a workload file may run."""

    store_new: bool = declared(
        True, "--store-result/--no-store", "Store today's answer as a new recommendation."
    )
    run_workload_file: bool = declared(
        False,
        "--run-workload-file",
        "Let a question about a workload file (FILE.py:FUNCTION) run that file again. Without it such a"
        " question is refused: anyone who can write the store could have pointed it at other code.",
    )


@dataclass(frozen=True, slots=True)
class ReportTarget:
    """Which stored recommendation ``report`` writes, and to which file."""

    last: bool = declared(False, "--last", "The newest stored recommendation (the default).")
    output: Path = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        Path("report.html"), "--output", "HTML file to write.", short="-o"
    )
    workload: str | None = declared(
        None, "--workload", "With --last: the newest for this workload.", short="-w"
    )
    force: bool = declared(False, "--force", "Replace the file at --output (an earlier report included).")


@dataclass(frozen=True, slots=True)
class CheckRun:
    """How ``check`` measures: for how long, over how many processes, on which device, judged how."""

    duration: float = declared(3.0, "--duration", "Seconds of timed steps per measurement.", minimum=0.5)
    nproc: int = declared(2, "--nproc", "Processes for the scaling check (1 skips it).", minimum=1)
    instance: str | None = declared(
        None,
        "--instance",
        "Judge CPU ratio, memory, bf16 and network against this catalog instance instead of this host.",
    )
    # Not a fixed set of choices: the device is the measuring child's to resolve.
    device: str = declared("auto", "--device", "auto, cpu or cuda.")
