"""A meter for a user's own training loop: samples per second and samples per dollar.

    meter = perdollar.Meter(batch_size=64, world_size=8, instance_type="p4d.24xlarge")
    for batch in loader:
        train_step(batch)
        meter.step()        # logs "… samples/s, … samples/$" every ``log_every`` steps

``batch_size`` is per process and ``world_size`` the number of processes, so the figures are
global. The price is the instance's hourly price (looked up in the catalog from
``instance_type``) times ``nodes``.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from perdollar.errors import PerdollarError

logger = logging.getLogger("perdollar.meter")


@dataclass(frozen=True, slots=True)
class MeterReading:
    step: int
    samples_per_second: float  # over the last logging window
    samples_per_dollar: float | None
    dollars_per_hour: float | None

    def line(self) -> str:
        text = f"step {self.step}: {self.samples_per_second:,.1f} samples/s"
        if self.samples_per_dollar is not None:
            text += f", {self.samples_per_dollar:,.0f} samples/$ at ${self.dollars_per_hour:.2f}/h"
        return text


def price_for_instance(instance_type: str, market: str = "on-demand", cloud: str | None = None) -> float:
    """The lowest catalog price per hour of ``instance_type`` in ``market``, across regions."""
    from perdollar.catalog import load

    catalog = load()
    instance = catalog.instance(instance_type, cloud)
    prices = [
        offer.price_per_hour
        for offer in catalog.offers
        if offer.instance_type == instance.name and offer.cloud == instance.cloud and offer.market == market
    ]
    if not prices:
        raise PerdollarError(
            f"the catalog has no {market} price for {instance.name}", "pass price_per_hour= yourself"
        )
    return min(prices)


def print_reading(reading: MeterReading) -> None:
    # Through logging when the program has configured it; otherwise straight to stderr, because an
    # unconfigured logger would swallow INFO lines and the meter would seem silent.
    if logging.getLogger().handlers or logger.handlers:
        logger.info(reading.line())
    else:
        print(f"perdollar: {reading.line()}", file=sys.stderr, flush=True)


class Meter:
    """Counts steps of a training loop and reports throughput and cost efficiency."""

    def __init__(
        self,
        batch_size: int,
        world_size: int = 1,
        *,
        price_per_hour: float | None = None,
        instance_type: str | None = None,
        market: str = "on-demand",
        nodes: int = 1,
        log_every: int = 100,
        warmup_steps: int = 10,
        sink: Callable[[MeterReading], None] | None = None,
        sync: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if batch_size <= 0 or world_size <= 0 or nodes <= 0 or log_every <= 0:
            raise PerdollarError(
                "Meter needs positive batch_size, world_size, nodes and log_every",
                "pass the per-process batch size and the number of processes",
            )
        if price_per_hour is None and instance_type is not None:
            price_per_hour = price_for_instance(instance_type, market)
        self.samples_per_step = batch_size * world_size
        self.dollars_per_hour = price_per_hour * nodes if price_per_hour is not None else None
        self.log_every = log_every
        self.warmup_steps = warmup_steps
        self.readings: list[MeterReading] = []
        self._sink = sink or print_reading
        self._sync = sync
        self._clock = clock
        self.steps = 0
        self._window_start = clock()
        self._window_steps = 0
        self._steady_start: float | None = None
        self._steady_steps = 0

    def _per_dollar(self, rate: float) -> float | None:
        if not self.dollars_per_hour:
            return None
        return rate * 3600 / self.dollars_per_hour

    def step(self, count: int = 1) -> MeterReading | None:
        """Count ``count`` finished steps; returns the reading when this call logged one."""
        self.steps += count
        self._window_steps += count
        if self.steps >= self.warmup_steps and self._steady_start is None:
            if self._sync:
                self._sync()
            self._steady_start = self._clock()
            self._steady_steps = self.steps
        if self._window_steps < self.log_every:
            return None
        if self._sync:
            self._sync()  # queued accelerator work belongs to these steps
        now = self._clock()
        elapsed = now - self._window_start
        rate = self._window_steps * self.samples_per_step / elapsed if elapsed > 0 else float("nan")
        reading = MeterReading(self.steps, rate, self._per_dollar(rate), self.dollars_per_hour)
        self.readings.append(reading)
        self._sink(reading)
        self._window_start, self._window_steps = now, 0
        return reading

    @property
    def samples_per_second(self) -> float | None:
        """Mean rate since warm-up ended (None until a step after warm-up)."""
        if self._steady_start is None or self.steps <= self._steady_steps:
            return None
        elapsed = self._clock() - self._steady_start
        return (self.steps - self._steady_steps) * self.samples_per_step / elapsed if elapsed > 0 else None

    @property
    def samples_per_dollar(self) -> float | None:
        rate = self.samples_per_second
        return self._per_dollar(rate) if rate is not None else None
