"""Run one benchmark in a child process and turn whatever happens into a :class:`Measurement`.

A crash, an out-of-memory error or a hang is a result (``status`` oom/error/timeout with the
reason), never an exception out of here. Bad input (an unknown workload, a bad mode) is still a
:class:`~perdollar.errors.PerdollarError`, raised before anything runs.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import time
from collections.abc import Mapping
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, cast

from perdollar.errors import PerdollarError
from perdollar.measure.bench_records import BenchResult, BenchSpec, LoopSettingsFields
from perdollar.measure.child import ProgressCallback, run_child, run_forked
from perdollar.measure.host import host_fingerprint
from perdollar.measure.loop import LoopSettings
from perdollar.measure.modes import MODES
from perdollar.measure.result import Measurement, Mode, Rate
from perdollar.sandbox import UserCodeFailed
from perdollar.vocabulary import Kind, checked_word

if TYPE_CHECKING:
    from perdollar.workload.spec import Workload

DEFAULT_DURATION_S = 20.0


def default_timeout(duration_s: float, nproc: int = 1) -> float:
    """Room for start-up and building the model on top of the measuring budget: of one run, and
    with ``nproc > 1`` of the one-process baseline run as well."""
    one_run = duration_s * 2 + 90
    return one_run + 30 * (nproc - 1) + (one_run if nproc > 1 else 0.0)


def timed_out_message(timeout_s: float) -> str:
    return f"timed out after {timeout_s:g} s: no result in that time (the workload hung or is too slow)"


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def _workload_reference(
    spec: str | Workload, batch_size: int | None, precision: str | None, kind: Kind | None, timeout_s: float
) -> tuple[Workload, str | None]:
    """The loaded workload and the string a fresh child loads it from (None: fork with the object)."""
    from perdollar.workload import load_workload, reference_names

    workload = load_workload(spec, batch_size=batch_size, precision=precision, kind=kind, timeout_s=timeout_s)
    if workload.origin is not None:
        return workload, workload.origin
    if isinstance(spec, str):
        return workload, spec
    if (
        workload.name in reference_names()
        and workload.fingerprint
        == load_workload(
            workload.name, batch_size=workload.batch_size, precision=workload.precision, kind=workload.kind
        ).fingerprint
    ):
        return workload, workload.name
    return workload, None


def _mfu(
    workload: Workload, samples_per_second: float, accelerator_key: str | None, accelerator_count: int
) -> float | None:
    """Model FLOPs utilisation against the catalog's dense peak for the workload's precision."""
    if not accelerator_key or samples_per_second <= 0:
        return None
    try:
        from perdollar.catalog import load
        from perdollar.profile import profile_workload

        dtype = {"amp-bf16": "bf16", "amp-fp16": "fp16"}.get(workload.precision, workload.precision)
        peak = load().accelerator(accelerator_key).peak_tflops(dtype)
        if not peak:
            return None
        flops_per_sample = profile_workload(workload).flops_per_sample
        return flops_per_sample * samples_per_second / (peak * 1e12 * max(accelerator_count, 1))
    except Exception:  # MFU is a bonus figure: never fail a measurement over it
        return None


def failed_to_load(
    spec: str | Workload,
    failure: UserCodeFailed,
    *,
    mode: Mode,
    nproc: int,
    started_at: str,
    wall_s: float,
    batch_size: int | None,
    precision: str | None,
) -> Measurement:
    """The measurement of a workload whose file could not even be loaded: named by its spec."""
    name = spec if isinstance(spec, str) else getattr(spec, "name", "workload")
    return Measurement(
        status=failure.status,
        mode=mode,
        workload_name=name,
        workload_fingerprint=hashlib.sha256(f"unloadable:{name}".encode()).hexdigest()[:16],
        batch_size=batch_size or 0,
        precision=precision or "unknown",
        host=host_fingerprint(),
        started_at=started_at,
        nproc=nproc,
        message=failure.problem,
        duration_s=round(wall_s, 2),
        extra={"where": failure.where} if failure.where else {},
    )


def make_spec(
    reference: str,
    *,
    mode: str,
    duration_s: float,
    batch_size: int | None,
    precision: str | None,
    kind: Kind | None,
    nproc: int,
    device: str,
    memory_limit_bytes: int | None,
    settings: LoopSettings | None,
    plan: str | None = None,
) -> BenchSpec:
    settings = settings or LoopSettings(duration_s=duration_s)
    # asdict of a LoopSettings holds exactly its fields.
    fields = cast(LoopSettingsFields, {**asdict(settings), "duration_s": duration_s})
    spec: BenchSpec = {
        "workload": reference,
        "mode": mode,
        "batch_size": batch_size,
        "precision": precision,
        "kind": kind,
        "nproc": nproc,
        "device": device,
        "memory_limit_bytes": memory_limit_bytes,
        "settings": fields,
    }
    if plan:
        spec = {"plan": plan, **spec}
    return spec


def to_measurement(
    result: BenchResult, *, workload: Workload, mode: Mode, nproc: int, started_at: str, wall_s: float
) -> Measurement:
    host = host_fingerprint()
    status = result["status"]
    extra_keys = (
        "device",
        "warmup_steps",
        "timed_steps",
        "blocks",
        "elapsed_s",
        "stop_reason",
        "torch_threads",
        "backend",
        "traceback",
        "stdout_tail",
        "host_dispatch_ms",
        "plan",
        "sharding",
        "activation_checkpointing",
        "data_parallel",
        "collective_dtype",
        "where",
    )
    fields: Mapping[str, object] = result
    extra = {key: fields[key] for key in extra_keys if key in fields}
    rate = Rate(**result["rate"]) if status == "ok" else None
    tokens_per_sample = workload.config.get("tokens_per_sample")
    if rate and isinstance(tokens_per_sample, int | float) and tokens_per_sample:  # priced by the token
        extra["tokens_per_second"] = rate.median * int(tokens_per_sample)
    accelerators = 1 if nproc == 1 else nproc
    cv = result.get("cv")
    return Measurement(
        status=status,
        mode=mode,
        workload_name=workload.name,
        # A language model's runs at any micro-batch and precision are filed under one key, so that
        # predictions of the model (which choose their own micro-batch) find them all.
        workload_fingerprint=str(workload.config.get("measured_as") or workload.fingerprint),
        batch_size=workload.batch_size,
        precision=workload.precision,
        host=host,
        started_at=started_at,
        samples_per_second=rate,
        cv=cv if cv is None or math.isfinite(cv) else None,
        step_time_ms=result.get("step_time_ms", {}),
        utilization=result.get("utilization", {}),
        peak_memory_bytes=result.get("peak_memory_bytes"),
        mfu=_mfu(workload, rate.median, host.accelerator_key, accelerators)
        if rate and mode != "data-only"
        else None,
        nproc=nproc,
        warnings=tuple(result.get("warnings", ())),
        message=result.get("message", ""),
        duration_s=round(wall_s, 2),
        extra=extra,
    )


def run_benchmark(
    spec: str | Workload,
    *,
    mode: str = "cached-input",
    duration_s: float = DEFAULT_DURATION_S,
    batch_size: int | None = None,
    precision: str | None = None,
    nproc: int = 1,
    timeout_s: float | None = None,
    device: str = "auto",
    kind: Kind | None = None,
    memory_limit_bytes: int | None = None,
    settings: LoopSettings | None = None,
    progress: ProgressCallback | None = None,
    plan: str | None = None,
) -> Measurement:
    """Measure a workload in a child process (see the module docstring).

    With ``nproc > 1`` a one-process run comes first, so the result carries the scaling
    efficiency: global samples/s over ``nproc`` times the one-process rate. A ``plan``
    ("fsdp+ac", see ``fsdp.py``) applies to the ``nproc`` run; the one-process baseline is plain.
    """
    try:
        measured_mode = checked_word(mode, MODES)
    except ValueError:
        raise PerdollarError(f"unknown mode {mode!r}", f"use one of: {', '.join(MODES)}") from None
    if nproc < 1:
        raise PerdollarError(f"--nproc must be at least 1, got {nproc}", "give a positive process count")
    if duration_s <= 0:
        raise PerdollarError(f"--duration must be positive, got {duration_s}", "give seconds, e.g. 20")
    gpus = host_fingerprint().accelerator_count
    if nproc > 1 and gpus and device != "cpu" and nproc > gpus:
        raise PerdollarError(
            f"--nproc {nproc} needs one GPU per process, and this host has {gpus}",
            f"use --nproc {gpus} or fewer, or --device cpu",
        )
    timeout = timeout_s if timeout_s is not None else default_timeout(duration_s, nproc)
    started_at, clock = _now(), time.monotonic()
    # The timeout bounds the whole measurement: loading the workload, the one-process baseline
    # and the run itself share it, so that no run takes longer than the user allowed.
    deadline = clock + timeout
    try:
        workload, reference = _workload_reference(spec, batch_size, precision, kind, timeout)
    except UserCodeFailed as failure:  # its file failed to load: that too is a result to keep
        return failed_to_load(
            spec,
            failure,
            mode=measured_mode,
            nproc=nproc,
            started_at=started_at,
            wall_s=time.monotonic() - clock,
            batch_size=batch_size,
            precision=precision,
        )

    def one(processes: int, phase_progress: ProgressCallback | None) -> Measurement:
        started_at, clock = _now(), time.monotonic()
        payload = make_spec(
            reference or workload.name,
            mode=mode,
            duration_s=duration_s,
            batch_size=workload.batch_size,
            precision=workload.precision,
            kind=workload.kind,
            nproc=processes,
            device=device,
            memory_limit_bytes=memory_limit_bytes,
            settings=settings,
            plan=plan if processes == nproc else None,
        )
        left = deadline - clock
        if left <= 0:
            result: BenchResult = {"status": "timeout"}
        elif reference is None:
            # A forked child shares this process's stdout: progress lines would land in the output.
            result = run_forked(workload, {**payload, "progress": False}, timeout_s=left)
        else:
            result = run_child(payload, timeout_s=left, progress=phase_progress)
        if result["status"] == "timeout":  # said of the user's whole timeout, not of what was left
            result = {**result, "message": timed_out_message(timeout)}
        return to_measurement(
            result,
            workload=workload,
            mode=measured_mode,
            nproc=processes,
            started_at=started_at,
            wall_s=time.monotonic() - clock,
        )

    if nproc == 1:
        return one(1, progress)

    def labelled(prefix: str) -> ProgressCallback | None:
        if progress is None:
            return None
        callback = progress
        return lambda phase, fraction: callback(f"{prefix} {phase}", fraction)

    single = one(1, labelled("1 process:"))
    if single.status == "timeout":  # no time is left for the run asked for: it is what timed out
        message = f"{single.message}, still in the one-process run the scaling is measured against"
        return replace(single, nproc=nproc, message=message)
    multi = one(nproc, labelled(f"{nproc} processes:"))
    if not (multi.ok and single.ok and multi.samples_per_second and single.samples_per_second):
        return multi
    single_rate = single.samples_per_second.median
    return replace(
        multi,
        scaling_efficiency=multi.samples_per_second.median / (nproc * single_rate),
        extra={**multi.extra, "single_process_samples_per_second": asdict(single.samples_per_second)},
    )
