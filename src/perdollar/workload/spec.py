"""A workload: what to run, described in a few lines, with a stable fingerprint."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, TypeAlias

if TYPE_CHECKING:
    import torch

PRECISIONS = ("fp32", "tf32", "amp-bf16", "amp-fp16", "bf16", "fp16")
OPTIMIZERS = ("adam", "adamw", "sgd")
Kind = Literal["train", "inference"]
# Where an input factory makes its batch: the step's device, or "cpu" for the input pipeline alone.
Device: TypeAlias = "torch.device | str"


@dataclass(frozen=True)
class Workload:
    """A training step (or an inference forward pass) to measure, profile and predict.

    ``model_factory()`` builds the ``torch.nn.Module`` (on the CPU, randomly initialised);
    ``input_factory(batch_size, device)`` returns one batch — a tuple of tensors or a dict —
    whose last element (or key ``"labels"``) holds the targets; ``loss_fn(outputs, batch)``
    returns a scalar loss (None: the model's output is the loss, or inference).
    ``config`` carries every setting that shapes the computation (sequence length, image
    size, vocabulary…) so that it enters the fingerprint.
    """

    name: str
    # What the factory returns is checked when the model is built (``step.build_model``).
    model_factory: Callable[[], object]
    input_factory: Callable[[int, Device], object]
    batch_size: int
    loss_fn: Callable[[object, object], torch.Tensor] | None = None
    precision: str = "fp32"
    optimizer: str = "adamw"
    learning_rate: float = 1e-4
    kind: Kind = "train"
    sample_unit: str = "samples"
    config: Mapping[str, object] = field(default_factory=dict)
    # Optional real input pipeline for `full` mode: (batch_size) -> iterable of batches on the CPU.
    data_loader_factory: Callable[[int], Iterable[object]] | None = None
    description: str = ""
    # "file.py:function" when loaded from the user's file: processes that run its code load it
    # again from there, since perdollar's own process holds only a stand-in (see stand_in.py).
    origin: str | None = None

    def with_overrides(
        self, *, batch_size: int | None = None, precision: str | None = None, kind: Kind | None = None
    ) -> Workload:
        return replace(
            self,
            batch_size=batch_size if batch_size is not None else self.batch_size,
            precision=precision if precision is not None else self.precision,
            kind=kind if kind is not None else self.kind,
        )

    @property
    def fingerprint(self) -> str:
        """Changes whenever anything that affects performance changes."""
        payload = {
            "name": self.name,
            "batch_size": self.batch_size,
            "precision": self.precision,
            "optimizer": self.optimizer if self.kind == "train" else None,
            "kind": self.kind,
            "config": {k: repr(v) for k, v in sorted(self.config.items())},
            "has_data_loader": self.data_loader_factory is not None,
        }
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
        return digest[:16]
