"""A Hugging Face ``Trainer`` callback: samples/s, tokens/s and samples per dollar while it trains.

    trainer = Trainer(..., callbacks=[PerdollarCallback(instance_type="g5.xlarge")])

Readings are printed every ``logging_steps`` (through the ``perdollar.meter`` logger, else to
stderr). When training ends, the steady readings (warm-up left out) are stored as a
measurement of this model on this machine, as ``perdollar bench`` stores its own; ``perdollar
recommend`` then calibrates from it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import sys
from typing import TYPE_CHECKING, TypedDict

from transformers import TrainerCallback

from perdollar.errors import PerdollarError
from perdollar.measure import steady
from perdollar.measure.host import host_fingerprint
from perdollar.measure.meter import Meter, MeterReading, print_reading
from perdollar.measure.result import Measurement, Rate

if TYPE_CHECKING:
    from transformers import TrainerControl, TrainerState, TrainingArguments


class _PriceOptions(TypedDict):
    price_per_hour: float | None
    instance_type: str | None
    market: str
    nodes: int


class PerdollarCallback(TrainerCallback):
    """Meter a ``transformers.Trainer`` run and store what it measured.

    ``tokens_per_sample``: sequence length for tokens/s; by default the length of the training
    set's first ``input_ids`` (exact for fixed-length data, approximate with dynamic padding).
    ``store``: False keeps the result out of the store; ``store_url`` picks another store.
    """

    def __init__(
        self,
        *,
        price_per_hour: float | None = None,
        instance_type: str | None = None,
        market: str = "on-demand",
        nodes: int = 1,
        warmup_steps: int = 10,
        tokens_per_sample: int | None = None,
        store: bool = True,
        store_url: str | None = None,
    ) -> None:
        if warmup_steps < 0 or (tokens_per_sample is not None and tokens_per_sample < 1):
            raise PerdollarError("warmup_steps must be ≥ 0 and tokens_per_sample ≥ 1", "e.g. warmup_steps=10")
        self.price_options: _PriceOptions = {"price_per_hour": price_per_hour, "instance_type": instance_type,
                              "market": market, "nodes": nodes}  # fmt: skip
        self.warmup_steps = warmup_steps
        self.tokens_per_sample = tokens_per_sample
        self.store, self.store_url = store, store_url
        self.meter: Meter | None = None
        self.readings: list[MeterReading] = []
        self.measurement: Measurement | None = None
        self.stored_id: str | None = None
        self._started_at = ""
        self._model_name = "model"
        self._fingerprint = ""

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        batch = args.per_device_train_batch_size * args.gradient_accumulation_steps
        self.meter = Meter(
            batch, max(args.world_size, 1), log_every=max(args.logging_steps or 50, 1),
            warmup_steps=self.warmup_steps, sink=self._reading, **self.price_options,
        )  # fmt: skip
        self._started_at = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
        model = kwargs.get("model")
        config = getattr(model, "config", None)
        self._model_name = getattr(config, "model_type", None) or type(model).__name__
        described = config.to_json_string() if config is not None else type(model).__name__
        self._fingerprint = hashlib.sha256(
            f"{described}|{batch}|{args.bf16}|{args.fp16}".encode()
        ).hexdigest()[:16]
        if self.tokens_per_sample is None:
            self.tokens_per_sample = _sequence_length(kwargs.get("train_dataloader"))

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        if self.meter is not None:
            self.meter.step()

    def _reading(self, reading: MeterReading) -> None:
        self.readings.append(reading)
        print_reading(reading)

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: object
    ) -> None:
        if self.meter is None or not state.is_world_process_zero:
            return
        self.measurement = self._summary(args)
        if self.measurement is None or not self.store:
            return
        from perdollar.store import open_store

        try:
            self.stored_id = open_store(self.store_url).save_measurement(
                self.measurement, source="hf-trainer"
            )
        except (
            PerdollarError
        ) as error:  # the run is done: a store that cannot be written loses only the record
            print(f"perdollar: the measurement was not stored: {error}", file=sys.stderr)
            return
        print(f"perdollar: stored measurement {self.stored_id}", file=sys.stderr)

    def _summary(self, args: TrainingArguments) -> Measurement | None:
        assert self.meter is not None
        steady_rates = [r.samples_per_second for r in self.readings if r.step > self.warmup_steps]
        if steady_rates:
            summary = steady.summarize(steady_rates, [], steady_reached=len(steady_rates) >= 3)
            rate, cv, warnings = summary.rate, summary.cv, summary.warnings
        elif self.meter.samples_per_second is not None:
            mean = self.meter.samples_per_second
            rate, cv = Rate(median=mean, low=mean, high=mean), None
            warnings = ("one reading only: the run was shorter than one logging window after warm-up",)
        else:
            return None
        extra: dict[str, object] = {"source": "transformers.Trainer", "steps": self.meter.steps}
        if self.tokens_per_sample:
            extra["tokens_per_second"] = rate.median * self.tokens_per_sample
            extra["tokens_per_sample"] = self.tokens_per_sample
        if self.meter.dollars_per_hour:
            extra["samples_per_dollar"] = rate.median * 3600 / self.meter.dollars_per_hour
            extra["dollars_per_hour"] = self.meter.dollars_per_hour
        return Measurement(
            status="ok",
            mode="full",
            workload_name=f"hf-trainer:{self._model_name}",
            workload_fingerprint=self._fingerprint,
            batch_size=args.per_device_train_batch_size,
            precision="amp-bf16" if args.bf16 else "amp-fp16" if args.fp16 else "fp32",
            host=host_fingerprint(),
            started_at=self._started_at,
            samples_per_second=rate,
            cv=cv,
            warnings=warnings,
            nproc=max(args.world_size, 1),
            extra=extra,
        )


def _sequence_length(loader: object) -> int | None:
    dataset = getattr(loader, "dataset", None)
    if dataset is None:
        return None
    try:
        first = dataset[0]
        return len(first["input_ids"]) if "input_ids" in first else None
    except (AttributeError, IndexError, KeyError, TypeError, ValueError):
        return None  # no indexable dataset of token ids: tokens/s is left out, samples/s stays
