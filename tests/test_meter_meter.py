"""perdollar.Meter: samples/s and samples/$ from a user's own loop."""

from __future__ import annotations

import importlib.util
import logging

import pytest

import perdollar
from perdollar.errors import PerdollarError
from perdollar.measure.meter import Meter, MeterReading


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_meter_logs_global_rate_and_samples_per_dollar_every_n_steps() -> None:
    clock, readings = _Clock(), []
    meter = Meter(
        batch_size=32,
        world_size=4,
        price_per_hour=3.6,
        log_every=10,
        warmup_steps=0,
        sink=readings.append,
        clock=clock,
    )
    for _ in range(25):
        clock.now += 0.1  # 0.1 s per step, 128 samples per step
        meter.step()
    assert [reading.step for reading in readings] == [10, 20]
    assert readings[0].samples_per_second == pytest.approx(1280)
    # 1280 samples/s × 3600 s/h ÷ $3.6/h
    assert readings[0].samples_per_dollar == pytest.approx(1_280_000)
    assert "samples/s" in readings[0].line() and "samples/$" in readings[0].line()


def test_meter_excludes_warm_up_from_its_overall_rate() -> None:
    clock = _Clock()
    meter = Meter(batch_size=10, log_every=1000, warmup_steps=5, clock=clock, sink=lambda reading: None)
    for step in range(25):
        clock.now += 2.0 if step < 5 else 0.5  # slow warm-up steps
        meter.step()
    assert meter.samples_per_second == pytest.approx(20.0)
    assert meter.samples_per_dollar is None  # no price given


def test_meter_prices_nodes() -> None:
    clock = _Clock()
    meter = Meter(
        batch_size=1,
        price_per_hour=2.0,
        nodes=3,
        log_every=1,
        warmup_steps=0,
        clock=clock,
        sink=lambda reading: None,
    )
    clock.now += 1.0
    reading = meter.step()
    assert isinstance(reading, MeterReading)
    assert reading.dollars_per_hour == pytest.approx(6.0)
    assert reading.samples_per_dollar == pytest.approx(600.0)


def test_meter_calls_sync_before_reading_the_clock() -> None:
    calls = []
    meter = Meter(
        batch_size=1,
        log_every=2,
        warmup_steps=0,
        sync=lambda: calls.append("sync"),
        sink=lambda reading: calls.append("log"),
    )
    meter.step()
    meter.step()
    assert calls[-2:] == ["sync", "log"]


def test_meter_rejects_nonsense() -> None:
    with pytest.raises(PerdollarError):
        Meter(batch_size=0)


def test_meter_is_exported_at_the_top_level() -> None:
    assert perdollar.Meter is Meter


def test_meter_looks_up_an_instance_price_in_the_catalog() -> None:
    pytest.importorskip("perdollar.catalog")
    from perdollar.catalog import load

    try:
        catalog = load()
    except Exception as error:  # the bundled catalog is built by another stage
        pytest.skip(f"catalog not available: {error}")
    offer = next(o for o in catalog.offers if o.market == "on-demand")
    meter = Meter(batch_size=8, instance_type=offer.instance_type)
    assert meter.dollars_per_hour is not None
    assert 0 < meter.dollars_per_hour <= offer.price_per_hour


def test_lightning_callback_needs_lightning_only_when_built() -> None:
    from perdollar.measure.lightning import MeterCallback

    has_lightning = any(importlib.util.find_spec(name) for name in ("lightning", "pytorch_lightning"))
    if has_lightning:
        callback = MeterCallback(batch_size=8, log_every=1)
        assert hasattr(callback, "on_train_batch_end")
    else:
        with pytest.raises(PerdollarError, match="Lightning"):
            MeterCallback(batch_size=8)


def test_meter_reports_without_a_sink(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    clock = _Clock()
    meter = Meter(batch_size=4, log_every=2, warmup_steps=0, clock=clock)
    with caplog.at_level(logging.INFO, logger="perdollar.meter"):
        for _ in range(2):
            clock.now += 0.5
            meter.step()
    # Through logging when it is configured (pytest configures it), else on stderr.
    assert "8.0 samples/s" in caplog.text + capsys.readouterr().err
