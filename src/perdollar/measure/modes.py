"""The three isolation modes as one ``step()`` callable each.

- ``full``: the workload's own input path (its data loader, else a freshly made batch per step);
- ``cached-input``: one batch made once and reused on the device: the ceiling without input;
- ``data-only``: the input pipeline alone, without the model: what the host can feed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perdollar.errors import PerdollarError
from perdollar.measure.result import Mode

if TYPE_CHECKING:
    from perdollar.workload.spec import Workload
    from perdollar.workload.step import StepRunner

MODES: tuple[Mode, ...] = ("full", "cached-input", "data-only")


@dataclass(frozen=True)
class PreparedStep:
    step: Callable[[], object]
    sync: Callable[[], None]
    samples_per_step: float
    runner: Any | None  # the StepRunner, when the mode runs the model


def resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise PerdollarError(
            f"device {device!r} asked for, but no CUDA GPU is visible",
            "use --device cpu or run on a GPU host",
        )
    return device


def device_sync(device: str) -> Callable[[], None]:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.synchronize
    return lambda: None


def to_device(batch: Any, device: str) -> Any:
    """Move a batch (tensor, tuple/list or dict of them) to ``device``."""
    if hasattr(batch, "to"):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, list | tuple):
        return type(batch)(to_device(value, device) for value in batch)
    return batch


def _endless(loader_factory: Callable[[int], Any], batch_size: int) -> Iterator[Any]:
    # A finite loader is restarted, as an epoch boundary would in training.
    return itertools.chain.from_iterable(loader_factory(batch_size) for _ in itertools.count())


def build_runner(workload: Workload, device: str) -> StepRunner:
    from perdollar.workload.step import build_step

    return build_step(workload, device)


def prepare(workload: Workload, mode: str, device: str, runner: StepRunner | None = None) -> PreparedStep:
    """A ``step()`` for ``mode``; ``runner`` lets the caller wrap the model (DDP) beforehand."""
    if mode not in MODES:
        raise PerdollarError(f"unknown mode {mode!r}", f"use one of: {', '.join(MODES)}")
    sync = device_sync(device)
    batch_size = workload.batch_size
    loader = workload.data_loader_factory

    if mode == "data-only":
        if loader is not None:
            batches = _endless(loader, batch_size)
            return PreparedStep(lambda: next(batches), lambda: None, batch_size, None)
        return PreparedStep(lambda: workload.input_factory(batch_size, "cpu"), lambda: None, batch_size, None)

    runner = runner if runner is not None else build_runner(workload, device)
    if mode == "cached-input":
        batch = runner.make_batch()
        return PreparedStep(lambda: runner.run(batch), sync, batch_size, runner)
    if loader is not None:
        batches = _endless(loader, batch_size)
        return PreparedStep(lambda: runner.run(to_device(next(batches), device)), sync, batch_size, runner)
    return PreparedStep(lambda: runner.run(runner.make_batch()), sync, batch_size, runner)
