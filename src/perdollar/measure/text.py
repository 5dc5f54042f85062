"""Measurements as lines for a terminal: every number with its unit and where it came from."""

from __future__ import annotations

from perdollar.fmt import format_bytes, format_number
from perdollar.measure.result import HostFingerprint, Measurement


def host_label(host: HostFingerprint) -> str:
    """What a measurement ran on, as people name it: the accelerator (else the CPU) and the instance."""
    instance = host.instance_type if host.instance_type not in ("", "unknown") else None
    if host.accelerator:
        device: str | None = host.accelerator
    elif host.cpu_cores and host.cpu_model not in ("", "unknown"):
        device = f"{host.cpu_model}, {host.cpu_cores} cores"
    else:  # a record of a job that never ran has only the instance it was meant for
        device = None
    if device and instance:
        return f"{device} on {instance}"
    return device or instance or "an unknown host"


def headline(measurement: Measurement) -> str:
    parts = [measurement.workload_name, measurement.mode]
    if measurement.batch_size:
        parts.append(f"batch {measurement.batch_size}")
    if measurement.precision != "unknown":
        parts.append(measurement.precision)
    if measurement.nproc > 1:
        parts.append(f"{measurement.nproc} processes")
    if measurement.extra.get("plan"):
        parts.append(f"plan {measurement.extra['plan']}")
    return " · ".join(parts) + f" — measured on {host_label(measurement.host)}"


def rate_line(measurement: Measurement) -> str:
    rate = measurement.samples_per_second
    if rate is None:
        return ""
    spread = (rate.high - rate.low) / 2 or None
    unit = measurement.extra.get("sample_unit") or "samples"
    text = (
        f"{format_number(rate.median, spread)} {unit}/s (median; 95% CI "
        f"{format_number(rate.low, spread)}–{format_number(rate.high, spread)}, "
        f"IQR {format_number(rate.iqr, spread)}"
    )
    if measurement.cv is not None:
        text += f", CV {measurement.cv:.1%}"
    return text + ")"


def lines(measurement: Measurement) -> list[str]:
    """The human summary of one measurement (no colour markup, so it is safe in any console)."""
    out = [headline(measurement)]
    if not measurement.ok:
        out.append(f"  status {measurement.status}: {measurement.message}")
        return out
    out.append(f"  throughput  {rate_line(measurement)}")
    if measurement.extra.get("log_format"):
        batch = f" × batch {measurement.batch_size}" if measurement.batch_size else ""
        out.append(f"  read as     {measurement.extra['log_format']}{batch}")
    if isinstance(measurement.extra.get("tokens_per_second"), int | float):
        out.append(
            f"              {format_number(measurement.extra['tokens_per_second'])} tokens/s "
            "(median samples/s × tokens per sample)"
        )
    steps = measurement.step_time_ms
    if steps:
        out.append(
            "  step time   "
            + " · ".join(f"{key} {steps[key]:.3g} ms" for key in ("p10", "p50", "p90", "p99") if key in steps)
        )
    usage = measurement.utilization
    resources = []
    if "cpu_percent" in usage:
        cores = len(usage.get("cpu_percent_per_core", []))
        resources.append(f"CPU {usage['cpu_percent']:.0f}% mean over {cores} cores")
    if "gpu_percent" in usage:
        resources.append(f"GPU {usage['gpu_percent']:.0f}%")
    if "power_w" in usage:
        resources.append(f"{usage['power_w']:.0f} W")
    if measurement.peak_memory_bytes:
        resources.append(f"peak memory {format_bytes(measurement.peak_memory_bytes)}")
    if measurement.mfu is not None:
        resources.append(f"MFU {measurement.mfu:.1%}")
    if resources:
        out.append("  resources   " + " · ".join(resources))
    if measurement.scaling_efficiency is not None:
        single = measurement.extra.get("single_process_samples_per_second", {}).get("median")
        base = f" (1 process: {format_number(single)} samples/s)" if single else ""
        out.append(
            f"  scaling     {measurement.scaling_efficiency:.0%} efficiency on {measurement.nproc} "
            f"processes{base}"
        )
    extra = measurement.extra
    if "warmup_steps" in extra:
        out.append(
            f"  run         {extra['warmup_steps']} warm-up steps, "
            f"{extra.get('timed_steps', 0)} timed in {extra.get('blocks', 0)} blocks, "
            f"stopped: {extra.get('stop_reason', '?')}, "
            f"{measurement.duration_s:.0f} s wall"
        )
    if isinstance(extra.get("host_dispatch_ms"), int | float):
        out.append(
            f"  host        {extra['host_dispatch_ms']:.3g} ms to enqueue one step on the CPU "
            "(no GPU runs the step faster on this host)"
        )
    out.extend(f"  warning     {warning}" for warning in measurement.warnings)
    return out
