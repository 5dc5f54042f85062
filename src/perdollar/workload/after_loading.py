"""Work the child that loads a user's file does next, in the same interpreter, and its outcome.

Every child that runs the user's code pays an interpreter start and the file's imports (torch:
about a second). A command that loads a file and will then trace it (profile, predict, recommend…)
has the loading child trace it too. Its outcome waits here, under the fingerprint of the parent's
Workload, until the code that would have started a child of its own asks for it; a failure is
raised then, as that child's would have been.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from dataclasses import dataclass

from perdollar.errors import PerdollarError
from perdollar.sandbox import Rest, checkpoint, run_isolated_with_checkpoint
from perdollar.workload.spec import Kind, Workload
from perdollar.workload.stand_in import describe, stand_in

_OUTCOMES: dict[tuple[str, str], Rest] = {}
_LOCK = threading.Lock()


@dataclass(frozen=True)
class NextInChild:
    """``target`` (``module:function``) is called on the loaded Workload, the command's options
    applied; its failures read ``{verb} FILE:function failed (...)``."""

    target: str
    verb: str


@dataclass(frozen=True)
class Pending:
    """The outcome of a :class:`NextInChild`, not yet filed: the fingerprint of the Workload the
    child ran it on (None: the options were invalid, it did not run) and how it ended."""

    next_in_child: NextInChild
    fingerprint: str | None
    rest: Rest

    def file_under(self, fingerprint: str) -> None:
        """File the outcome under ``fingerprint``, the parent's, if it is the child's too (else the
        work is left to a child of its own)."""
        if self.fingerprint is not None and self.fingerprint == fingerprint:
            with _LOCK:
                _OUTCOMES[(fingerprint, self.next_in_child.target)] = self.rest


def take_outcome(fingerprint: str, next_in_child: NextInChild) -> Rest | None:
    """The outcome filed for ``fingerprint``, once (a second ask runs the work again)."""
    with _LOCK:
        return _OUTCOMES.pop((fingerprint, next_in_child.target), None)


def load_isolated_then(
    spec: str, options: Mapping[str, object], next_in_child: NextInChild, *, timeout_s: float | None
) -> tuple[Workload, Pending]:
    """The Workload ``spec`` names, loaded in a child that then runs ``next_in_child`` on it with
    ``options`` (batch_size, precision, kind) applied. A failed load raises here; a failure of what
    came next is kept in the Pending. Each part has ``timeout_s``."""
    fields, rest = run_isolated_with_checkpoint(
        "perdollar.workload.after_loading:load_then",
        {"spec": spec, **options, "target": next_in_child.target},
        what=f"loading {spec}", rest_what=f"{next_in_child.verb} {spec}", timeout_s=timeout_s,
    )  # fmt: skip
    return stand_in(spec, fields), Pending(next_in_child, fields["next_fingerprint"], rest)


def load_then(
    spec: str, batch_size: int | None, precision: str | None, kind: Kind | None, target: str
) -> object:
    """Runs in the child: describe the file's Workload to the parent (the checkpoint), then call
    ``target`` on it with the options applied."""
    from perdollar.workload.loader import check_workload, import_from_file

    workload = import_from_file(spec)
    shaped = workload.with_overrides(batch_size=batch_size, precision=precision, kind=kind)
    try:
        fingerprint: str | None = check_workload(shaped).fingerprint
    except PerdollarError:  # an invalid option: the parent says so when it applies the options
        fingerprint = None
    checkpoint({**describe(workload), "next_fingerprint": fingerprint})
    if fingerprint is None:
        return None
    module_name, _, function_name = target.partition(":")
    return getattr(importlib.import_module(module_name), function_name)(shaped)
