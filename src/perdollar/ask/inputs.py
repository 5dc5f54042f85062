"""What every question needs loaded once: the catalog, the workload, its profile and measurements.

This is the one place where a question's workload is loaded and profiled, and where stored and
given measurements are gathered, so that ``recommend``, ``compare``, ``predict``, ``sweep`` and
``history reevaluate`` calibrate from the same evidence.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.files import checked_user_file
from perdollar.measure.result import Measurement
from perdollar.predict.imports import load_measurements_file
from perdollar.predict.published import PUBLISHED_MAX_BYTES
from perdollar.profile.model import Profile
from perdollar.profile.profiler import load_to_profile, profile_workload
from perdollar.question import Question
from perdollar.workload import Workload

Progress = Callable[[str], None]


def quiet(_message: str) -> None:
    """A progress callback that says nothing."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """A question's loaded inputs; built once and shared by every stage that answers it."""

    catalog: Catalog
    workload: Workload
    profile: Profile
    measurements: tuple[Measurement, ...] = ()


def load_inputs(
    question: Question,
    *,
    catalog: Catalog | None = None,
    workload: Workload | None = None,
    measurements: Sequence[Measurement] = (),
    progress: Progress = quiet,
) -> Inputs:
    """Load the catalog and the workload (unless given) and profile the workload once."""
    catalog = catalog if catalog is not None else load_catalog()
    if workload is None:
        workload = load_to_profile(
            question.workload_name,
            batch_size=question.batch_size,
            precision=question.precision,
            kind=question.goal.kind,
        )
    progress(f"profiling {workload.name} (batch {workload.batch_size}, {workload.precision})")
    profile = profile_workload(workload)
    return Inputs(catalog, workload, profile, tuple(measurements))


def measurements_from_file(path: Path) -> list[Measurement]:
    """``--measurements FILE``: a published-schema CSV or ``perdollar bench --json`` output."""
    checked_user_file(
        path, "--measurements", PUBLISHED_MAX_BYTES, "give a CSV (published schema) or bench JSON file"
    )
    return load_measurements_file(path)  # never empty: a file with no usable row is refused there


def stored_measurements(workload_fingerprint: str, store_url: str | None) -> list[Measurement]:
    """Measurements stored earlier for this workload (every command calibrates from them)."""
    from perdollar.store import open_store

    with open_store(store_url) as store:
        return store.measurements_for(workload_fingerprint)


def with_stored_measurements(inputs: Inputs, store_url: str | None) -> Inputs:
    """The inputs with the measurements stored for their workload added."""
    given = {_identity(m) for m in inputs.measurements}
    stored = [
        m
        for m in stored_measurements(inputs.profile.workload_fingerprint, store_url)
        if _identity(m) not in given
    ]
    return replace(inputs, measurements=(*inputs.measurements, *stored)) if stored else inputs


def _identity(measurement: Measurement) -> tuple[str, str, str]:
    """A run is the same run when stored and when given (``--measure`` both stores and passes it)."""
    return (measurement.workload_fingerprint, measurement.started_at, measurement.mode)


def workload_to_measure(name: str, *, batch_size: int | None, precision: str | None) -> Workload:
    """The workload ``recommend --measure`` benchmarks here, at the batch size and precision asked."""
    from perdollar.workload import load_workload

    return load_workload(name, batch_size=batch_size, precision=precision)


def measured_here(workload: Workload) -> Measurement:
    """``workload``'s training throughput on this machine, which calibrates the answer beside the
    stored and given measurements."""
    from perdollar.measure import run_benchmark

    return run_benchmark(workload, mode="cached-input", duration_s=20.0)
