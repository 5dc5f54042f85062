"""``perdollar bench``: measure a workload (or any command) on this machine."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from perdollar.cli import common
from perdollar.cli.bench_options import (
    BENCH_HELP,
    TARGET_HELP,
    BenchRun,
    CommandReading,
    LatencyCurve,
)
from perdollar.cli.declared import Group, StoreChoice, takes
from perdollar.cli.persist import check_store
from perdollar.cli.shared_options import OPTIONS, OUTPUT, STEP, Output, Step
from perdollar.errors import EXIT_FAILURE, EXIT_OK, PerdollarError

if TYPE_CHECKING:
    from perdollar.cli.common import ProgressHandle
    from perdollar.measure.result import Measurement


def _duration_seconds(text: str) -> float:
    if re.fullmatch(r"\s*[0-9]*\.?[0-9]+\s*", text):
        if (seconds := float(text)) <= 0:  # a bare number here means seconds
            raise PerdollarError(f"--duration must be positive, got {text!r}", "e.g. --duration 20 (s) or 2m")
        return seconds
    return common.parse_duration_hours(text, "--duration") * 3600


def _bytes(text: str | None) -> int | None:
    if text is None:
        return None
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([kmgt]?)i?b?\s*", text, re.I)
    if not match:
        raise PerdollarError(f"--memory-limit {text!r} is not a size", "write it like 8G or 512M")
    scale = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}[match.group(2).lower()]
    if (size := int(float(match.group(1)) * scale)) <= 0:
        raise PerdollarError(f"--memory-limit must be positive, got {text!r}", "write it like 8G or 512M")
    return size


def _concurrency(text: str | None) -> list[int] | None:
    if not text:
        return None
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as error:
        raise PerdollarError(
            f"--concurrency {text!r} is not a list of integers", "write it like 1,4,16"
        ) from error
    if not levels or min(levels) < 1:
        raise PerdollarError(f"--concurrency {text!r} needs positive levels", "write it like 1,4,16")
    return levels


def _progress_callback(handle: ProgressHandle, duration_s: float) -> Callable[[str, float], None]:
    def update(phase: str, fraction: float) -> None:
        handle.update(description=f"{phase} ({duration_s:.0f} s budget)", completed=fraction * 100)

    return update


def _command_mode(target: list[str]) -> bool:
    # "--" separates perdollar's options from a command; click drops it, so look at the raw line.
    return len(target) > 1 or "--" in sys.argv[1:]


def _finish(
    measurements: list[Measurement],
    *,
    json_output: bool,
    store_url: str | None,
    store: bool,
    verdict: str | None = None,
) -> int:
    """Print, store, and turn the statuses into the exit code."""
    from functools import partial

    from perdollar.cli.persist import attempt_store, save_measurement
    from perdollar.measure.serialize import measurement_to_dict
    from perdollar.measure.text import lines

    stored: list[str | None] = []
    failure: PerdollarError | None = None
    for measurement in measurements:
        key, error = attempt_store(partial(save_measurement, measurement, store_url=store_url, enabled=store))
        stored.append(key)
        failure = failure or error
    if json_output:
        documents = [
            {**measurement_to_dict(m), "id": key} for m, key in zip(measurements, stored, strict=True)
        ]
        if len(documents) == 1 and verdict is None:
            common.emit_json(documents[0])
        else:
            common.emit_json({"measurements": documents, "verdict": verdict}, table="measurements")
    else:
        for measurement, key in zip(measurements, stored, strict=True):
            for line in lines(measurement):
                common.console.print(line, highlight=False, markup=False, soft_wrap=True)
            if key:
                common.console.print(f"  stored as {key}", highlight=False, markup=False)
        if verdict:
            common.console.print(f"verdict: {verdict}", highlight=False, markup=False, soft_wrap=True)
    if failure is not None:
        raise failure
    return EXIT_OK if all(m.ok for m in measurements) else EXIT_FAILURE


def run_modes(
    workload: str,
    *,
    modes: list[str],
    duration_s: float,
    nproc: int,
    batch_size: int | None,
    precision: str | None,
    device: str,
    timeout_s: float | None,
    memory_limit_bytes: int | None,
    json_output: bool,
    store_url: str | None,
    store: bool,
    plan: str | None = None,
) -> int:
    from perdollar.measure.bounds import verdict_for
    from perdollar.measure.runner import run_benchmark

    measurements = []
    for mode in modes:
        with common.progress(f"{workload} {mode}", total=100, quiet=json_output) as handle:
            measurements.append(
                run_benchmark(
                    workload,
                    mode=mode,
                    duration_s=duration_s,
                    batch_size=batch_size,
                    precision=precision,
                    nproc=nproc,
                    timeout_s=timeout_s,
                    device=device,
                    memory_limit_bytes=memory_limit_bytes,
                    progress=_progress_callback(handle, duration_s),
                    plan=plan,
                )
            )
    verdict = verdict_for(measurements) if len(modes) > 1 else None
    return _finish(measurements, json_output=json_output, store_url=store_url, store=store, verdict=verdict)


def run_command_cli(
    argv: list[str],
    *,
    pattern: str | None,
    unit: str | None = None,
    batch_size: int | None = None,
    duration_s: float | None,
    timeout_s: float | None,
    json_output: bool,
    store_url: str | None,
    store: bool,
) -> int:
    import time

    from perdollar.measure.command import run_command
    from perdollar.measure.log_formats import LogFormat

    with common.progress(f"running {argv[0]}", quiet=json_output) as handle:
        seen = [0, 0.0]  # readings so far, when the line was last redrawn

        def on_reading(value: float, log_format: LogFormat) -> None:
            seen[0] += 1
            now = time.monotonic()
            if now - seen[1] >= 0.1:  # a redraw per reading would slow reading a fast printer down
                seen[1] = now
                handle.update(
                    description=f"running {argv[0]}: {seen[0]} readings, "
                    f"last {value:,.4g} {log_format.unit}/s ({log_format.name})"
                )

        measurement = run_command(
            argv,
            pattern=pattern,
            duration_s=duration_s,
            timeout_s=timeout_s or 24 * 3600.0,
            on_reading=on_reading,
            batch_size=batch_size,
            unit=unit,
        )
    return _finish([measurement], json_output=json_output, store_url=store_url, store=store)


def run_find_max_batch(
    workload: str,
    *,
    precision: str | None,
    device: str,
    start: int | None,
    memory_limit_bytes: int | None,
    json_output: bool,
) -> int:
    from perdollar.measure.bounds import find_max_batch

    with common.progress(f"{workload}: searching the largest batch", quiet=json_output) as handle:

        def on_probe(batch: int, status: str) -> None:
            handle.update(description=f"{workload}: batch {batch} → {status}")

        result = find_max_batch(
            workload,
            start=start,
            precision=precision,
            device=device,
            memory_limit_bytes=memory_limit_bytes,
            on_probe=on_probe,
        )
    if json_output:
        common.emit_json(result)
    else:
        probes = ", ".join(f"{batch}:{status}" for batch, status in result.probes)
        if result.largest_fitting is not None:
            beyond = (
                f"; batch {result.smallest_failing} does not"
                if result.smallest_failing
                else f" ({result.message})"
            )
            common.console.print(
                f"{workload}: largest batch that fits is {result.largest_fitting}{beyond}",
                highlight=False,
                markup=False,
            )
        else:
            common.console.print(f"{workload}: {result.message}", highlight=False, markup=False)
        common.console.print(f"  probes (batch:status): {probes}", highlight=False, markup=False)
    return EXIT_OK if result.largest_fitting is not None else EXIT_FAILURE


@takes(
    run=Group(BenchRun, panel=OPTIONS),
    reading=Group(CommandReading, panel="Reading a command's output"),
    curve=Group(LatencyCurve, panel="Serving latency curve"),
    store=StoreChoice,
    step=STEP,
    output=OUTPUT,
)
def bench(
    target: list[str] = typer.Argument(None, metavar="WORKLOAD | -- COMMAND…", help=TARGET_HELP),
    *,
    run: BenchRun,
    reading: CommandReading,
    curve: LatencyCurve,
    store: StoreChoice,
    step: Step,
    output: Output,
) -> int:
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    mode, duration, nproc, plan, device = run.mode, run.duration, run.nproc, run.plan, run.device
    timeout, find_max_batch, memory_limit = run.timeout, run.find_max_batch, run.memory_limit
    target = list(target or [])
    if not target:
        raise PerdollarError("nothing to measure", "give a workload (bench mlp) or a command after --")
    duration_s = _duration_seconds(duration) if duration else None
    check_store(store.store_url, enabled=store.enabled)
    if plan is not None and (curve.inference or find_max_batch or _command_mode(target)):
        raise PerdollarError(
            "--plan shards the training of a workload",
            "drop --plan, or --inference, --find-max-batch and the command",
        )
    if _command_mode(target):
        return run_command_cli(
            target, pattern=reading.pattern, unit=reading.unit, batch_size=batch_size, duration_s=duration_s,
            timeout_s=timeout, json_output=json_output, store_url=store.store_url, store=store.enabled,
        )  # fmt: skip
    if len(target) != 1:
        raise PerdollarError("give one workload to measure", "e.g. perdollar bench mlp")
    workload = target[0]
    from perdollar.workload.step import resolve_device

    resolve_device(device)  # a misspelt device is bad input (exit 2), not a failed run (exit 1)
    if curve.inference:
        from perdollar.cli.network_serving_cmd import bench_inference

        code: int = bench_inference(
            workload, batch_size=batch_size, precision=precision, duration_s=duration_s,
            max_batch=curve.max_batch, concurrency=_concurrency(curve.concurrency), p99_ceiling_ms=None,
            json_output=json_output, store_url=store.store_url, store=store.enabled, device=device,
        )  # fmt: skip
        return code
    if find_max_batch:
        return run_find_max_batch(
            workload, precision=precision, device=device, start=batch_size,
            memory_limit_bytes=_bytes(memory_limit), json_output=json_output,
        )  # fmt: skip
    return _run_training(
        workload, mode, duration_s, nproc, plan, batch_size, precision, device, timeout, memory_limit,
        json_output, store,
    )  # fmt: skip


def _run_training(
    workload: str, mode: str, duration_s: float | None, nproc: int, plan: str | None, batch_size: int | None,
    precision: str | None, device: str, timeout: float | None, memory_limit: str | None, json_output: bool,
    store: StoreChoice,
) -> int:  # fmt: skip
    """Training steps of a workload in each asked mode, measured, printed and stored."""
    from perdollar.measure.runner import DEFAULT_DURATION_S

    if plan is not None:
        from perdollar.measure.fsdp import parse_bench_plan

        parsed = parse_bench_plan(plan)
        if parsed.micro_batch and batch_size and parsed.micro_batch != batch_size:
            raise PerdollarError(
                f"--plan says mb{parsed.micro_batch} and --batch-size says {batch_size}",
                "give the per-process batch once",
            )
        batch_size, plan = parsed.micro_batch or batch_size, parsed.token()
    modes = ["cached-input", "full", "data-only"] if mode == "all" else [mode]
    return run_modes(
        workload, modes=modes, duration_s=duration_s or DEFAULT_DURATION_S, nproc=nproc,
        batch_size=batch_size, precision=precision, device=device, timeout_s=timeout,
        memory_limit_bytes=_bytes(memory_limit), json_output=json_output, store_url=store.store_url,
        store=store.enabled, plan=plan,
    )  # fmt: skip


def register(app: typer.Typer) -> None:
    """Add ``bench`` to ``app``."""
    app.command("bench", help=BENCH_HELP, no_args_is_help=True)(bench)
