"""perdollar: which cloud machine should this deep-learning workload run on?

The package is organised as one folder per pipeline stage; data flows one way:
catalog -> workload -> profile -> measure -> predict -> price -> select -> report,
with ``store`` and ``launch`` beside them.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from perdollar.ask.answer import recommend
    from perdollar.ask.notebook import compare, predict
    from perdollar.measure.meter import Meter

__all__ = ["Meter", "__version__", "compare", "predict", "recommend"]

# name -> module that defines it; imported on first use.
_LAZY = {
    "Meter": "perdollar.measure.meter",
    "recommend": "perdollar.ask.answer",
    "compare": "perdollar.ask.notebook",
}


class CallableStage(ModuleType):
    """The ``predict`` stage's package, callable as the notebook's ``perdollar.predict(...)``.

    ``perdollar.predict`` names the stage's package as soon as anything imports it, so the
    notebook function cannot be a plain attribute of the same name; the package becomes callable
    instead (its own ``__init__`` sets this class) and a call goes to
    :func:`perdollar.ask.notebook.predict`.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from perdollar.ask.notebook import predict

        return predict(*args, **kwargs)


def __getattr__(name: str) -> object:
    # Importing torch-heavy modules lazily keeps `import perdollar` and the CLI start fast.
    if name == "predict":
        import importlib

        return importlib.import_module("perdollar.predict")
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'perdollar' has no attribute {name!r}")
