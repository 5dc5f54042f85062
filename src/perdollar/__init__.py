"""perdollar: which cloud machine should this deep-learning workload run on?

The package is organised as one folder per pipeline stage; data flows one way:
catalog -> workload -> profile -> measure -> predict -> price -> select -> report,
with ``store`` and ``launch`` beside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from perdollar.measure.meter import Meter

__all__ = ["Meter", "__version__"]


def __getattr__(name: str) -> Any:
    # Importing torch-heavy modules lazily keeps `import perdollar` and the CLI start fast.
    if name == "Meter":
        from perdollar.measure.meter import Meter

        return Meter
    raise AttributeError(f"module 'perdollar' has no attribute {name!r}")
