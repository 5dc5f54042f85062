"""``perdollar check``: run the measurements the checklist needs, profile and predict the workload,
then evaluate the checklist (:mod:`perdollar.report.checklist`, which renders its items)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from perdollar.measure.result import Measurement
from perdollar.report.checklist import CheckedMachine, CheckItem, evaluate
from perdollar.report.checklist_inputs import (
    evidence_from_measurements,
    max_batch_for,
    target_for_host,
    target_for_instance,
)

if TYPE_CHECKING:
    from perdollar.catalog import Catalog, InstanceType
    from perdollar.profile.model import Profile
    from perdollar.workload.spec import Workload


@dataclass(frozen=True, slots=True)
class CheckRun:
    workload_name: str
    workload_fingerprint: str
    target: CheckedMachine
    measurements: tuple[Measurement, ...]
    items: tuple[CheckItem, ...]


def run_checks(
    spec: str,
    *,
    duration_s: float,
    batch_size: int | None,
    precision: str | None,
    nproc: int,
    instance: str | None,
    device: str = "auto",
    on_step: Callable[[str], None] = lambda _text: None,
) -> CheckRun:
    """Benchmark ``spec`` in the modes the checklist needs and evaluate every item."""
    from perdollar.measure import host_fingerprint, run_benchmark
    from perdollar.measure.modes import resolve_device as device_here
    from perdollar.workload import load_workload
    from perdollar.workload.step import resolve_device

    # A misspelt or absent device is bad input (exit 2), found before any run, not four failed runs.
    resolve_device(device)
    device_here(device)
    workload = load_workload(spec, batch_size=batch_size, precision=precision)
    catalog = _catalog_or_none()
    if instance:
        if catalog is None:
            from perdollar.errors import PerdollarError

            raise PerdollarError(
                "the catalog could not be loaded, so --instance cannot be judged",
                "run `perdollar catalog` to see the problem, or leave out --instance",
            )
        instance_type = catalog.instance(instance)
        target = target_for_instance(instance_type, catalog)
    else:
        instance_type = None
        target = target_for_host(host_fingerprint(), catalog)

    runs = [("cached-input", 1), ("full", 1), ("data-only", 1)] + (
        [("cached-input", nproc)] if nproc > 1 else []
    )
    measurements = []
    for mode, processes in runs:
        on_step(
            f"measuring {workload.name} in {mode} mode"
            + (f" with {processes} processes" if processes > 1 else "")
        )
        measurements.append(
            run_benchmark(workload, mode=mode, duration_s=duration_s, nproc=processes, device=device)
        )

    input_bytes, max_batch, predicted = _profile_facts(workload, target, instance_type, catalog, on_step)
    if predicted:
        target = replace(target, predicted_samples_per_second=predicted)
    evidence = evidence_from_measurements(
        measurements,
        precision=workload.precision,
        input_bytes_per_sample=input_bytes,
        max_batch_that_fits=max_batch,
    )
    return CheckRun(
        workload.name, workload.fingerprint, target, tuple(measurements), evaluate(evidence, target)
    )


def _catalog_or_none() -> Catalog | None:
    try:
        from perdollar.catalog import load

        return load()
    except Exception:
        return None


def _profile_facts(
    workload: Workload,
    target: CheckedMachine,
    instance_type: InstanceType | None,
    catalog: Catalog | None,
    on_step: Callable[[str], None],
) -> tuple[float | None, int | None, float | None]:
    """Input bytes per sample, the largest batch that fits the target's memory and, for a catalog
    instance, the samples/s one of its devices is predicted to train at: all from the profile."""
    try:
        from perdollar.profile import profile_workload

        on_step(f"profiling {workload.name}")
        profile = profile_workload(workload)
    except Exception:
        return None, None, None
    # An instance is judged only where the catalog loaded (``run_checks`` refuses it otherwise).
    predicted = None
    if instance_type is not None and catalog is not None:
        predicted = _predicted_per_device(profile, instance_type, catalog)
    memory = profile.memory
    static = memory.weights + memory.gradients + memory.optimizer_state
    per_sample = (memory.activations + memory.workspace) / max(profile.batch_size, 1)
    max_batch = (
        max_batch_for(
            static_bytes=static, per_sample_bytes=per_sample, capacity_bytes=target.memory_bytes_per_device
        )
        if target.memory_bytes_per_device
        else None
    )
    return profile.input_bytes_per_sample or None, max_batch, predicted


def _predicted_per_device(profile: Profile, instance_type: InstanceType, catalog: Catalog) -> float | None:
    from perdollar.predict import predict

    prediction = predict(profile, instance_type, catalog)
    if not prediction.samples_per_second or prediction.excluded_reason:
        return None
    devices = prediction.nodes * max(prediction.accelerators_per_node, 1.0)
    return prediction.samples_per_second / devices
