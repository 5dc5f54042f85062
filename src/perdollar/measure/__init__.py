"""The benchmark harness: measure a workload on this machine, honestly.

``run_benchmark`` runs a workload in a child process until its samples/s are steady and tight
(or the time budget ends) and returns a :class:`Measurement` whatever happens; ``Meter`` times a
user's own training loop; ``host_fingerprint`` says what the numbers were measured on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perdollar.measure.result import HostFingerprint, Measurement, Rate

if TYPE_CHECKING:
    from perdollar.measure.bounds import MaxBatch, bound_verdict, find_max_batch
    from perdollar.measure.command import run_command
    from perdollar.measure.host import host_fingerprint
    from perdollar.measure.meter import Meter
    from perdollar.measure.runner import run_benchmark

__all__ = [
    "HostFingerprint",
    "MaxBatch",
    "Measurement",
    "Meter",
    "Rate",
    "bound_verdict",
    "find_max_batch",
    "host_fingerprint",
    "run_benchmark",
    "run_command",
]

_LAZY = {
    "MaxBatch": "perdollar.measure.bounds",
    "bound_verdict": "perdollar.measure.bounds",
    "find_max_batch": "perdollar.measure.bounds",
    "run_command": "perdollar.measure.command",
    "host_fingerprint": "perdollar.measure.host",
    "Meter": "perdollar.measure.meter",
    "run_benchmark": "perdollar.measure.runner",
}


def __getattr__(name: str) -> Any:
    # Lazy, so `import perdollar.measure` (e.g. for the result types) stays light.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'perdollar.measure' has no attribute {name!r}")
