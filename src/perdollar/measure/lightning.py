"""A PyTorch Lightning callback built on :class:`~perdollar.measure.meter.Meter`.

Lightning is optional: this module imports without it, and only building the callback needs it.

    trainer = lightning.Trainer(callbacks=[MeterCallback(batch_size=64, instance_type="g5.xlarge")])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypedDict, Unpack

from perdollar.errors import PerdollarError
from perdollar.measure.meter import Meter, MeterReading


class MeterOptions(TypedDict, total=False):
    """:class:`~perdollar.measure.meter.Meter`'s keyword arguments after the batch size."""

    world_size: int
    price_per_hour: float | None
    instance_type: str | None
    market: str
    nodes: int
    log_every: int
    warmup_steps: int
    sink: Callable[[MeterReading], None] | None
    sync: Callable[[], None] | None
    clock: Callable[[], float]


class _LogsMetrics(Protocol):
    """What the callback uses of a ``LightningModule``."""

    def log(self, name: str, value: float) -> None: ...


def _callback_base() -> type | None:
    for module in ("lightning.pytorch", "pytorch_lightning"):
        try:
            imported = __import__(module, fromlist=["Callback"])
            base: type = imported.Callback
            return base
        except ImportError:
            continue
    return None


def MeterCallback(batch_size: int, **meter_options: Unpack[MeterOptions]) -> Any:
    """A Lightning ``Callback`` that steps a Meter after every training batch (an instance of
    Lightning's own ``Callback``, a class known only once Lightning is imported).

    ``world_size`` defaults to the trainer's, and each reading is also logged through the
    module's ``log`` (``perf/samples_per_second``, ``perf/samples_per_dollar``).
    """
    base = _callback_base()
    if base is None:
        raise PerdollarError(
            "PyTorch Lightning is not installed", "pip install lightning (or use Meter directly)"
        )

    class _MeterCallback(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__()
            self.meter: Meter | None = None

        def on_train_start(self, trainer: object, pl_module: object) -> None:
            options: MeterOptions = {"world_size": getattr(trainer, "world_size", 1), **meter_options}
            self.meter = Meter(batch_size, **options)

        def on_train_batch_end(
            self, trainer: object, pl_module: _LogsMetrics, outputs: object, batch: object, batch_idx: int
        ) -> None:
            if self.meter is None:
                return
            reading = self.meter.step()
            if reading is not None:
                pl_module.log("perf/samples_per_second", reading.samples_per_second)
                if reading.samples_per_dollar is not None:
                    pl_module.log("perf/samples_per_dollar", reading.samples_per_dollar)

    return _MeterCallback()
