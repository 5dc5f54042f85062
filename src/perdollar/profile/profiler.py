"""Tracing a workload into a :class:`Profile`, once per fingerprint."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from perdollar.profile import profile_store
from perdollar.profile.model import Profile
from perdollar.sandbox import in_sandbox, run_isolated
from perdollar.workload.after_loading import NextInChild, take_outcome
from perdollar.workload.loader import load_workload
from perdollar.workload.references import is_reference_workload
from perdollar.workload.spec import Kind, Workload

if TYPE_CHECKING:
    from perdollar.profile.tracer import TraceResult as _TraceResult

_CACHE: dict[str, Profile] = {}
_CACHE_LOCK = threading.Lock()
_TRACE_NEXT = NextInChild("perdollar.profile.profiler:trace_loaded", "profiling")


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
    traced_after_loading = take_outcome(key, _TRACE_NEXT)
    if traced_after_loading is not None and traced_after_loading.failure is not None:
        raise traced_after_loading.failure
    if traced_after_loading is not None and _is_profile_of(traced_after_loading.value, key):
        profile: Profile = traced_after_loading.value
    elif workload.origin is not None and not in_sandbox():
        profile = run_isolated(
            "perdollar.profile.profiler:profile_origin",
            {
                "origin": workload.origin,
                "batch_size": workload.batch_size,
                "precision": workload.precision,
                "kind": workload.kind,
            },
            what=f"profiling {workload.origin}",
            timeout_s=timeout_s,
        )
    elif is_reference_workload(workload):
        profile = _reference_profile(workload)
    else:
        profile = _traced(workload)
    with _CACHE_LOCK:
        _CACHE[key] = profile
    return profile


def _reference_profile(workload: Workload) -> Profile:
    """A built-in's profile: kept in the cache, else shipped with the package, else traced. Both of
    the latter are kept, so the next process reads one small file (not the whole shipped set)."""
    from perdollar.profile.shipped import shipped_profile

    key = workload.fingerprint
    kept = profile_store.load(key)
    if kept is not None:
        return kept
    profile = shipped_profile(key) or _traced(workload)
    profile_store.save(profile)
    return profile


def load_to_profile(
    spec: str | Workload,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    kind: Kind | None = None,
    timeout_s: float | None = None,
) -> Workload:
    """``load_workload`` for a command that will profile the workload: a user's file is traced in
    the child that loads it (one interpreter, not two), and :func:`profile_workload` takes that
    profile, or raises that trace's failure as a child of its own would have."""
    return load_workload(
        spec,
        batch_size=batch_size,
        precision=precision,
        kind=kind,
        timeout_s=timeout_s,
        next_in_child=_TRACE_NEXT,
    )


def trace_loaded(workload: Workload) -> Profile:
    """Runs in the child that loaded the user's file for :func:`load_to_profile`."""
    return _traced(workload)


def _is_profile_of(value: object, fingerprint: str) -> bool:
    return isinstance(value, Profile) and value.workload_fingerprint == fingerprint


def profile_origin(origin: str, batch_size: int, precision: str, kind: Kind) -> Profile:
    """Runs in the sandboxed child: load the user's file here and trace it."""
    return _traced(load_workload(origin, batch_size=batch_size, precision=precision, kind=kind))


def profile_workloads(workloads: list[Workload], *, timeout_s: float | None = None) -> list[Profile]:
    """:func:`profile_workload` of each; those of one user file are traced in one child process
    (a batch-size ladder would otherwise start one interpreter per rung)."""
    with _CACHE_LOCK:
        missing = [w for w in workloads if w.fingerprint not in _CACHE]
    origins = {w.origin for w in missing}
    if len(missing) > 1 and len(origins) == 1 and None not in origins and not in_sandbox():
        traced: list[Profile] = run_isolated(
            "perdollar.profile.profiler:profile_origin_many",
            {"origin": missing[0].origin,
             "shapes": [(w.batch_size, w.precision, w.kind) for w in missing]},
            what=f"profiling {missing[0].origin}", timeout_s=timeout_s,
        )  # fmt: skip
        with _CACHE_LOCK:
            _CACHE.update((w.fingerprint, p) for w, p in zip(missing, traced, strict=True))
    return [profile_workload(w, timeout_s=timeout_s) for w in workloads]


def profile_origin_many(origin: str, shapes: list[tuple[int, str, Kind]]) -> list[Profile]:
    """Runs in the sandboxed child: one trace per (batch size, precision, kind) of the file."""
    return [profile_origin(origin, batch, precision, kind) for batch, precision, kind in shapes]


def _traced(workload: Workload) -> Profile:
    # torch is imported where a trace runs: perdollar's process only looks profiles up.
    from perdollar.profile.memory import gradient_allreduce_bytes, memory_breakdown
    from perdollar.profile.tracer import trace_step

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
