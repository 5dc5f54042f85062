"""Tracing a workload into a :class:`Profile`, once per fingerprint."""

from __future__ import annotations

import threading

from perdollar.profile.memory import gradient_allreduce_bytes, memory_breakdown
from perdollar.profile.model import Profile
from perdollar.profile.tracer import TraceResult as _TraceResult
from perdollar.profile.tracer import trace_step
from perdollar.sandbox import in_sandbox, run_isolated
from perdollar.workload.loader import load_workload
from perdollar.workload.spec import Kind, Workload

_CACHE: dict[str, Profile] = {}
_CACHE_LOCK = threading.Lock()


def _input_bytes_per_sample(trace: _TraceResult, batch_size: int) -> float:
    from perdollar.profile.operators import tensor_bytes, tensors_in

    batch = trace.batch
    values = list(batch.values()) if isinstance(batch, dict) else batch
    return sum(tensor_bytes(t) for t in tensors_in(values)) / batch_size


def profile_workload(workload: Workload, *, timeout_s: float | None = None) -> Profile:
    """Trace one step of ``workload`` on fake tensors (no compute); cached per fingerprint.

    A workload from the user's file is traced in a child process (``timeout_s`` bounds it).
    """
    key = workload.fingerprint
    with _CACHE_LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached
    if workload.origin is not None and not in_sandbox():
        profile: Profile = run_isolated(
            "perdollar.profile.profiler:profile_origin",
            {"origin": workload.origin, "batch_size": workload.batch_size,
             "precision": workload.precision, "kind": workload.kind},
            what=f"profiling {workload.origin}", timeout_s=timeout_s,
        )
    else:
        profile = _traced(workload)
    with _CACHE_LOCK:
        _CACHE[key] = profile
    return profile


def profile_origin(origin: str, batch_size: int, precision: str, kind: Kind) -> Profile:
    """Runs in the sandboxed child: load the user's file here and trace it."""
    return _traced(load_workload(origin, batch_size=batch_size, precision=precision, kind=kind))


def _traced(workload: Workload) -> Profile:
    key = workload.fingerprint
    trace = trace_step(workload)
    model = trace.runner.model
    params = {id(p): p for p in model.parameters()}
    profile = Profile(
        workload_name=workload.name,
        workload_fingerprint=key,
        kind=workload.kind,
        batch_size=workload.batch_size,
        precision=workload.precision,
        sample_unit=workload.sample_unit,
        params=sum(p.numel() for p in params.values()),
        trainable_params=sum(p.numel() for p in params.values() if p.requires_grad),
        operators=trace.operators,
        memory=memory_breakdown(trace, workload.kind),
        gradient_bytes=gradient_allreduce_bytes(trace) if workload.kind == "train" else 0.0,
        input_bytes_per_sample=_input_bytes_per_sample(trace, workload.batch_size),
        unclassified_ops=trace.unclassified,
    )
    return profile
