"""A user's workload file, loaded in a child process and described to the parent.

perdollar's own process never imports the user's file (see :mod:`perdollar.sandbox`). A child
imports it and calls its function, and the parent receives the Workload's plain fields: enough
for names, fingerprints, prices and predictions. Its callables are stand-ins; the processes that
run the step load the file again from ``origin``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from perdollar.sandbox import run_isolated
from perdollar.workload.spec import Workload

_PLAIN_FIELDS = (
    "name",
    "batch_size",
    "precision",
    "optimizer",
    "learning_rate",
    "kind",
    "sample_unit",
    "description",
)


@dataclass(frozen=True)
class ShownAs:
    """A config value that cannot cross a process boundary, kept as the text the fingerprint uses."""

    text: str

    def __repr__(self) -> str:
        return self.text


@dataclass(frozen=True)
class UserFunction:
    """Stands in for one of the workload's callables in perdollar's own process.

    perdollar's commands never call it: they trace and measure in child processes, which load
    the file from ``origin`` themselves (the hostile-workload tests hold every command to that).
    A library caller who does call it, in a notebook say, has the file imported in their own
    process, as they would by importing it themselves.
    """

    origin: str
    attribute: str

    # Typed as loosely as the user's function, found in their file by name when called.
    def __call__(self, *args: object, **kwargs: object) -> Any:
        function = getattr(_imported(self.origin), self.attribute)
        return function(*args, **kwargs)


@functools.cache
def _imported(origin: str) -> Workload:
    from perdollar.workload.loader import import_from_file

    return import_from_file(origin)


def _portable(value: object) -> object:
    """Plain data crosses to the parent as it is; anything else as the text its repr gives."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)) and all(_is_plain(item) for item in value):
        return value
    if isinstance(value, dict) and all(isinstance(k, str) and _is_plain(v) for k, v in value.items()):
        return value
    return ShownAs(repr(value))


def _is_plain(value: object) -> bool:
    return _portable(value) is value


def describe(workload: Workload) -> dict[str, object]:
    """Runs in the child: what the parent may hold of ``workload``."""
    return {
        **{name: getattr(workload, name) for name in _PLAIN_FIELDS},
        "config": {key: _portable(value) for key, value in workload.config.items()},
        "has_loss_fn": workload.loss_fn is not None,
        "has_data_loader": workload.data_loader_factory is not None,
    }


def describe_file(spec: str) -> dict[str, object]:
    """Runs in the child: import ``spec`` and return what the parent may hold of its Workload."""
    from perdollar.workload.loader import import_from_file

    return describe(import_from_file(spec))


def load_isolated(spec: str, *, timeout_s: float | None) -> Workload:
    """The Workload ``spec`` names, its file imported in a child process only."""
    fields = run_isolated(
        "perdollar.workload.stand_in:describe_file",
        {"spec": spec},
        what=f"loading {spec}",
        timeout_s=timeout_s,
    )
    return stand_in(spec, fields)


def stand_in(spec: str, fields: Mapping[str, Any]) -> Workload:
    """The parent's Workload for ``spec`` from the child's description of it.

    ``fields`` came from the child as the user's Workload held them, unchecked here (the child's
    checks stand), so that the parent holds what the child loaded."""
    return Workload(
        **{name: fields[name] for name in _PLAIN_FIELDS},
        config=fields["config"],
        model_factory=UserFunction(spec, "model_factory"),
        input_factory=UserFunction(spec, "input_factory"),
        loss_fn=UserFunction(spec, "loss_fn") if fields["has_loss_fn"] else None,
        data_loader_factory=UserFunction(spec, "data_loader_factory") if fields["has_data_loader"] else None,
        origin=spec,
    )
