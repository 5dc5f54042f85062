"""Turning stored or fresh measurements into the checklist's evidence, and a catalog instance or
this host into the machine it is judged against."""

from __future__ import annotations

from typing import TYPE_CHECKING

from perdollar.measure.result import HostFingerprint, Measurement
from perdollar.report.checklist import CheckedMachine, Evidence

if TYPE_CHECKING:
    from perdollar.catalog import Catalog, InstanceType

GIB = 2**30


def latest_by_mode(measurements: list[Measurement]) -> dict[str, Measurement]:
    """The newest successful single-process measurement per mode, plus ``multi`` for --nproc runs."""
    chosen: dict[str, Measurement] = {}
    for measurement in sorted(measurements, key=lambda m: m.started_at):
        if not measurement.ok:
            continue
        chosen["multi" if measurement.nproc > 1 else measurement.mode] = measurement
    return chosen


def evidence_from_measurements(
    measurements: list[Measurement],
    *,
    precision: str | None = None,
    input_bytes_per_sample: float | None = None,
    max_batch_that_fits: int | None = None,
) -> Evidence:
    by_mode = latest_by_mode(measurements)
    cached = by_mode.get("cached-input")
    return Evidence(
        cached=cached,
        full=by_mode.get("full"),
        data_only=by_mode.get("data-only"),
        multi=by_mode.get("multi"),
        precision=precision or (cached.precision if cached else None),
        input_bytes_per_sample=input_bytes_per_sample,
        max_batch_that_fits=max_batch_that_fits,
    )


def max_batch_for(
    *, static_bytes: float, per_sample_bytes: float, capacity_bytes: float, headroom: float = 0.9
) -> int | None:
    """The largest batch whose memory (fixed part + per-sample part) fits in ``headroom`` of capacity."""
    if per_sample_bytes <= 0:
        return None
    batch = int((capacity_bytes * headroom - static_bytes) // per_sample_bytes)
    return batch if batch > 0 else None


def target_for_instance(instance: InstanceType, catalog: Catalog) -> CheckedMachine:
    """A catalog instance type as the machine to judge against."""
    count = float(instance.accelerator_count or 0)
    accelerator = None
    if instance.accelerator_key:
        try:
            accelerator = catalog.accelerator(instance.accelerator_key)
        except Exception:
            accelerator = None
    if count:
        memory = (
            instance.accelerator_memory_gib_total / count * GIB
            if instance.accelerator_memory_gib_total
            else None
        )
    else:
        memory = instance.memory_gib * GIB
    return CheckedMachine(
        name=f"{instance.cloud} {instance.name}",
        vcpus=float(instance.vcpus),
        accelerators=count,
        accelerator_name=instance.accelerator_name or (accelerator.key if accelerator else None),
        memory_bytes_per_device=memory,
        supports_bf16=accelerator.supports_bf16 if accelerator else None,
        network_gbps=instance.network_gbps,
    )


def target_for_host(host: HostFingerprint, catalog: Catalog | None) -> CheckedMachine:
    """This machine: its accelerator from the catalog's table where known, else its CPU and RAM."""
    accelerator = None
    if host.accelerator_key and catalog is not None:
        try:
            accelerator = catalog.accelerator(host.accelerator_key)
        except Exception:
            accelerator = None
    name = "this host" if host.instance_type in ("", "unknown") else host.instance_type
    if host.accelerator_count and accelerator is not None:
        return CheckedMachine(
            name=name,
            vcpus=host.cpu_cores,
            accelerators=host.accelerator_count,
            accelerator_name=accelerator.key,
            memory_bytes_per_device=accelerator.memory_gib * GIB,
            supports_bf16=accelerator.supports_bf16,
        )
    return CheckedMachine(
        name=name,
        vcpus=host.cpu_cores,
        accelerators=float(host.accelerator_count),
        accelerator_name=host.accelerator or f"CPU ({host.cpu_model})",
        memory_bytes_per_device=host.memory_gib * GIB,
        supports_bf16=None,
    )
