"""What ``recommend`` and ``compare`` read from their options: the target, the spot interruption
rate, measurement files, the workload's profile and an optional local measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perdollar.cli import common
from perdollar.errors import PerdollarError


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


def load_measurements(path: Path | None) -> list[Any]:
    if path is None:
        return []
    if not path.is_file():
        problem = "is a folder" if path.is_dir() else "does not exist"
        raise PerdollarError(
            f"--measurements {path} {problem}", "give a CSV (published schema) or bench JSON file"
        )
    try:
        from perdollar.predict.imports import load_measurements_file
    except ImportError:
        found = bench_json(path)
    else:
        found = list(load_measurements_file(path))
    if not found:
        raise PerdollarError(
            f"--measurements {path} holds no measurements",
            "give rows in the schema of published_dev.csv or the output of perdollar bench --json",
        )
    return found


def bench_json(path: Path) -> list[Any]:
    """perdollar's own bench JSON (one measurement or {"measurements": [...]})."""
    import json

    from perdollar.measure.serialize import measurement_from_dict

    try:
        document = json.loads(path.read_text())
        items = document.get("measurements", [document]) if isinstance(document, dict) else document
        return [measurement_from_dict(item) for item in items]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise PerdollarError(
            f"--measurements {path} is not perdollar bench JSON ({error})",
            "give the output of perdollar bench --json",
        ) from None


def profile_spec(workload: str, batch_size: int | None, precision: str | None, say: Any) -> tuple[Any, Any]:
    from perdollar.profile import profile_workload
    from perdollar.workload import load_workload

    spec = load_workload(workload, batch_size=batch_size, precision=precision)
    say(f"profiling {spec.name} (batch {spec.batch_size}, {spec.precision})")
    return spec, profile_workload(spec)


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
