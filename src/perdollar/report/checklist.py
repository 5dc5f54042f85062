"""The performance checklist: automated checks of how well a workload uses its machine.

The items follow the cloud ML performance checklist (Chaim Rand, "Cloud ML Performance
Checklist", Towards Data Science): input-pipeline bottlenecks (full vs cached input), accelerator
utilisation under 80%, unused memory that would allow a larger batch, mixed precision where the
chip supports bf16, the host's CPU-to-accelerator ratio, multi-process scaling, and data-ingest
bandwidth against the instance's network. Each check is a pure function of measurements,
profile and hardware facts, and says pass / warn / fail / unknown with the number behind it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from perdollar.fmt import format_bytes
from perdollar.measure.result import Measurement

Status = Literal["pass", "warn", "fail", "unknown"]

UTILISATION_TARGET = 80.0  # percent; below this the step is bottlenecked somewhere
INPUT_BOUND_WARN = 0.95  # full-pipeline rate below this fraction of the cached-input rate
INPUT_BOUND_FAIL = 0.80
MEMORY_HEADROOM_WARN = 0.5  # peak below this fraction of device memory: a larger batch fits
MAX_BATCH_STEP = 8  # the largest batch multiple the fix suggests at once
SCALING_WARN, SCALING_FAIL = 0.9, 0.7
# N processes cannot do more than N times the work of one: past this (run-to-run noise allowed
# for) the one-process baseline was slowed, and the efficiency says nothing of the workload.
SCALING_CEILING = 1.1
CPU_SPARE_WARN = 1.5  # cores available per core needed to feed one accelerator
NETWORK_WARN, NETWORK_FAIL = 0.5, 1.0  # share of the instance's network the input stream needs


@dataclass(frozen=True, slots=True)
class CheckItem:
    key: str
    title: str
    status: Status
    evidence: str  # the measured number(s) behind the status, with units
    fix: str  # what to do; empty when there is nothing to do


@dataclass(frozen=True, slots=True)
class CheckedMachine:
    """The machine the checks judge against: this host, or a candidate instance."""

    name: str
    vcpus: float
    accelerators: float  # devices per node; 0 on a CPU-only machine
    accelerator_name: str | None = None
    memory_bytes_per_device: float | None = None  # accelerator memory (or host RAM on CPU)
    supports_bf16: bool | None = None
    network_gbps: float | None = None
    # Training samples/s one of its devices is predicted to reach: an instance other than this host
    # is fed at its own rate, not at the rate this host measured (None: judge by the measurement).
    predicted_samples_per_second: float | None = None


@dataclass(frozen=True, slots=True)
class Evidence:
    """Everything the checks may use; anything missing makes its checks `unknown`."""

    cached: Measurement | None = None  # cached-input training steps
    full: Measurement | None = None  # the real input pipeline
    data_only: Measurement | None = None  # the input pipeline alone
    multi: Measurement | None = None  # --nproc > 1
    precision: str | None = None
    input_bytes_per_sample: float | None = None
    max_batch_that_fits: int | None = None


def _rate(measurement: Measurement | None) -> float | None:
    if measurement is None or not measurement.ok or measurement.samples_per_second is None:
        return None
    return measurement.samples_per_second.median


def _n(value: float) -> str:
    return f"{value:,.3g}" if value < 1000 else f"{value:,.0f}"


def check_input_bound(evidence: Evidence) -> CheckItem:
    title = "Input pipeline keeps up (full vs cached input)"
    full, cached = _rate(evidence.full), _rate(evidence.cached)
    if full is None or cached is None:
        missing = "full" if full is None else "cached-input"
        return CheckItem(
            "input-bound",
            title,
            "unknown",
            f"no successful {missing} measurement",
            "run `perdollar bench WORKLOAD --mode full` and `--mode cached-input`",
        )
    ratio = full / cached
    status: Status = "pass" if ratio >= INPUT_BOUND_WARN else "warn" if ratio >= INPUT_BOUND_FAIL else "fail"
    evidence_text = (
        f"full pipeline {_n(full)} samples/s vs cached input {_n(cached)} samples/s "
        f"({ratio:.0%} of the input-free rate)"
    )
    fix = (
        ""
        if status == "pass"
        else (
            "the input pipeline is the bottleneck: add data-loader workers and prefetching, move "
            "preprocessing offline or onto the accelerator, or pick an instance with more vCPUs"
        )
    )
    return CheckItem("input-bound", title, status, evidence_text, fix)


def check_utilisation(evidence: Evidence, target: CheckedMachine) -> CheckItem:
    title = f"Accelerator utilisation ≥ {UTILISATION_TARGET:.0f}%"
    measurement = evidence.full if _rate(evidence.full) else evidence.cached
    utilisation: Mapping[str, object] = measurement.utilization if measurement is not None else {}
    gpu, cpu = utilisation.get("gpu_percent"), utilisation.get("cpu_percent")
    if isinstance(gpu, int | float):
        value, what = float(gpu), "GPU"
    elif isinstance(cpu, int | float) and not target.accelerators:
        value, what = float(cpu), "CPU (no accelerator on this host)"
    else:
        return CheckItem(
            "utilisation",
            title,
            "unknown",
            "no utilisation was sampled during the run",
            "run `perdollar bench` on the machine (NVML is read where available)",
        )
    status: Status = (
        "pass" if value >= UTILISATION_TARGET else "warn" if value >= UTILISATION_TARGET / 2 else "fail"
    )
    fix = (
        ""
        if status == "pass"
        else (
            "the step waits on something other than compute: profile it (torch.profiler), look for "
            "input stalls, host-device copies and small kernels; a larger batch often helps"
        )
    )
    return CheckItem("utilisation", title, status, f"{what} busy {value:.0f}% during the measured steps", fix)


def check_memory_headroom(evidence: Evidence, target: CheckedMachine) -> CheckItem:
    title = "Memory is used (a larger batch would not fit)"
    measurement = evidence.cached or evidence.full
    peak = measurement.peak_memory_bytes if measurement is not None and measurement.ok else None
    capacity = target.memory_bytes_per_device
    if peak is None or not capacity:
        return CheckItem(
            "memory-headroom",
            title,
            "unknown",
            "no peak-memory reading or capacity",
            "run `perdollar bench WORKLOAD` on the target machine",
        )
    used = peak / capacity
    batch = measurement.batch_size if measurement is not None else 0
    evidence_text = f"peak {format_bytes(peak)} of {format_bytes(capacity)} ({used:.0%}) at batch {batch}"
    if evidence.max_batch_that_fits:
        evidence_text += f"; the profile says up to batch {evidence.max_batch_that_fits:,} fits"
    if used >= MEMORY_HEADROOM_WARN:
        return CheckItem("memory-headroom", title, "pass", evidence_text, "")
    fits = evidence.max_batch_that_fits or int(batch * MEMORY_HEADROOM_WARN / max(used, 1e-9))
    # Step up gradually: very large batches change convergence, so suggest at most 8× at a time.
    larger = max(min(fits, batch * MAX_BATCH_STEP), batch + 1)
    return CheckItem(
        "memory-headroom",
        title,
        "warn",
        evidence_text,
        f"try a larger batch (e.g. {larger:,}) with `--batch-size`; it amortises fixed per-step "
        "costs (kernel launches, gradient exchange) and usually raises samples per dollar",
    )


def check_mixed_precision(evidence: Evidence, target: CheckedMachine) -> CheckItem:
    title = "Mixed precision where the chip supports bf16"
    precision = evidence.precision or (evidence.cached.precision if evidence.cached else None)
    if precision is None:
        return CheckItem("mixed-precision", title, "unknown", "precision unknown", "")
    chip = target.accelerator_name or target.name
    if precision in ("bf16", "fp16", "fp8", "fp8-rowwise", "amp-bf16", "amp-fp16"):
        return CheckItem("mixed-precision", title, "pass", f"runs in {precision} on {chip}", "")
    if target.supports_bf16 is None:
        return CheckItem(
            "mixed-precision",
            title,
            "unknown",
            f"runs in {precision}; bf16 support of {chip} is not known",
            "",
        )
    if not target.supports_bf16:
        return CheckItem(
            "mixed-precision", title, "pass", f"runs in {precision}; {chip} has no fast bf16", ""
        )
    return CheckItem(
        "mixed-precision",
        title,
        "warn",
        f"runs in {precision} although {chip} supports bf16",
        "try `--precision bf16` (autocast): less memory, faster matmuls, and bf16 rarely needs loss scaling",
    )


def _feed_rate(evidence: Evidence, target: CheckedMachine) -> tuple[float | None, str]:
    """Samples/s one device of the target consumes, and where the figure comes from."""
    if target.predicted_samples_per_second:
        where = target.accelerator_name or target.name
        return target.predicted_samples_per_second, f" (predicted on {where})"
    return _rate(evidence.cached), ""


def check_cpu_ratio(evidence: Evidence, target: CheckedMachine) -> CheckItem:
    title = "Enough host CPU per accelerator to feed it"
    data_rate = _rate(evidence.data_only)
    feed, source = _feed_rate(evidence, target)
    host_cores = evidence.data_only.host.cpu_cores if evidence.data_only else None
    if data_rate is None or feed is None or not host_cores:
        return CheckItem(
            "cpu-ratio",
            title,
            "unknown",
            "needs data-only and cached-input measurements",
            "run `perdollar bench WORKLOAD --mode data-only`",
        )
    per_core = data_rate / host_cores
    devices = max(target.accelerators, 1.0)
    cores_needed = feed / per_core  # to feed one device at its input-free rate
    cores_available = target.vcpus / devices
    spare = cores_available / cores_needed if cores_needed else float("inf")
    status: Status = "pass" if spare >= CPU_SPARE_WARN else "warn" if spare >= 1.0 else "fail"
    evidence_text = (
        f"input pipeline {_n(per_core)} samples/s per core; feeding {_n(feed)} samples/s{source} needs "
        f"{cores_needed:.2g} cores per device, {target.name} has {cores_available:.3g}"
    )
    fix = (
        ""
        if status == "pass"
        else (
            "choose an instance with more vCPUs per accelerator, or make preprocessing cheaper "
            "(offline, on the accelerator, or on auxiliary CPU workers)"
        )
    )
    return CheckItem("cpu-ratio", title, status, evidence_text, fix)


def check_scaling(evidence: Evidence) -> CheckItem:
    title = "Multi-process scaling efficiency"
    multi = evidence.multi
    if multi is None or not multi.ok or multi.scaling_efficiency is None:
        return CheckItem(
            "scaling",
            title,
            "unknown",
            "no multi-process measurement",
            "run `perdollar bench WORKLOAD --nproc 2` (or the number of devices)",
        )
    efficiency = multi.scaling_efficiency
    measured = f"{multi.nproc} processes reach {efficiency:.0%} of {multi.nproc}× one process"
    if efficiency > SCALING_CEILING:
        return CheckItem(
            "scaling",
            title,
            "warn",
            f"{measured}: more than 100% (beyond the {SCALING_CEILING - 1:.0%} noise allowed) cannot be "
            "real scaling, so the one-process run that is the baseline was slowed (another program on "
            "the cores, or more threads than cores)",
            "measure again on a quiet machine, for longer (--duration 10); the scaling is not known "
            "until the two runs agree",
        )
    status: Status = (
        "pass" if efficiency >= SCALING_WARN else "warn" if efficiency >= SCALING_FAIL else "fail"
    )
    fix = (
        ""
        if status == "pass"
        else (
            "gradient exchange is exposed: use a larger per-device batch, overlap all-reduce with the "
            "backward pass (bucketed DDP), or prefer one multi-GPU instance to several single-GPU ones"
        )
    )
    return CheckItem("scaling", title, status, measured, fix)


def check_network_ingest(evidence: Evidence, target: CheckedMachine) -> CheckItem:
    title = "Data-ingest bandwidth fits the network"
    cached, source = _feed_rate(evidence, target)
    per_sample = evidence.input_bytes_per_sample
    if cached is None or not per_sample or not target.network_gbps:
        what = "network bandwidth of the target" if not target.network_gbps else "input bytes per sample"
        return CheckItem(
            "network-ingest",
            title,
            "unknown",
            f"{what} not known",
            "pass --instance NAME to judge against a catalog instance",
        )
    needed_gbps = cached * max(target.accelerators, 1.0) * per_sample * 8 / 1e9
    share = needed_gbps / target.network_gbps
    status: Status = "pass" if share < NETWORK_WARN else "warn" if share < NETWORK_FAIL else "fail"
    fix = (
        ""
        if status == "pass"
        else (
            "streaming the data would saturate the network: store it compressed or pre-decoded, "
            "cache it on local disk, or choose an instance with more network bandwidth"
        )
    )
    return CheckItem(
        "network-ingest",
        title,
        status,
        f"streaming {format_bytes(per_sample)}/sample at {_n(cached)} samples/s per device{source} needs "
        f"{needed_gbps:.2g} Gbit/s of {target.network_gbps:g} Gbit/s ({share:.0%})",
        fix,
    )


def evaluate(evidence: Evidence, target: CheckedMachine) -> tuple[CheckItem, ...]:
    """All checks, in the order a person would work through them."""
    return (
        check_input_bound(evidence),
        check_utilisation(evidence, target),
        check_memory_headroom(evidence, target),
        check_mixed_precision(evidence, target),
        check_cpu_ratio(evidence, target),
        check_scaling(evidence),
        check_network_ingest(evidence, target),
    )
