"""What ``recommend`` and ``compare`` read from their options: the target, the spot interruption
rate, measurement files and an optional local measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perdollar.ask import measurements_from_file
from perdollar.cli import common
from perdollar.errors import PerdollarError
from perdollar.measure.result import Measurement


def target_samples(samples: str | None, epochs: float | None, dataset_size: str | None) -> float | None:
    if samples and epochs is not None:
        raise PerdollarError("give --samples or --epochs, not both", "drop one of them")
    if samples:
        return common.parse_count(samples, "--samples")
    if epochs is not None:
        if not dataset_size:
            raise PerdollarError("--epochs needs --dataset-size", "add --dataset-size N (samples per epoch)")
        if epochs <= 0:
            raise PerdollarError(f"--epochs must be positive, got {epochs}", "give a positive number")
        return epochs * common.parse_count(dataset_size, "--dataset-size")
    if dataset_size:
        raise PerdollarError("--dataset-size needs --epochs", "add --epochs E")
    return None


def interruption_rate_from_text(text: str | None) -> float | None:
    if text is None:
        return None
    from perdollar.price.frame import monthly_fraction_from_text

    try:
        return monthly_fraction_from_text(text)
    except ValueError:
        raise PerdollarError(
            f"--interruption-rate {text!r} is not a monthly fraction",
            "write it like 10% or 0.1 (share of instances interrupted per month)",
        ) from None


def load_measurements(path: Path | None) -> list[Measurement]:
    return [] if path is None else measurements_from_file(path)


def measure_here(spec: Any, json_output: bool, store_url: str | None, store: bool) -> list[Any]:
    from perdollar.cli.persist import save_measurement
    from perdollar.measure import run_benchmark

    with common.progress(f"measuring {spec.name} on this machine", quiet=json_output):
        measurement = run_benchmark(spec, mode="cached-input", duration_s=20.0)
    save_measurement(measurement, store_url=store_url, enabled=store)
    if not measurement.ok:
        common.err_console.print(
            f"local measurement {measurement.status}: {measurement.message}; predicting from specs",
            highlight=False,
        )
    return [measurement]
