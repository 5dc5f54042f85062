"""Traced profiles of the built-in reference workloads kept in the cache folder
(:mod:`perdollar.cache`), so that asking about ``vit-b16`` again neither imports torch nor traces
(a trace of a vision model takes seconds).

One JSON file per profile, named by the workload's fingerprint, the installed torch and the code
that builds and traces the references: a new torch or a changed tracer or model traces again
instead of reading a stale file. A user's own workload is never kept here (its file can change
while its fingerprint does not). An unreadable file is traced again.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from perdollar import cache
from perdollar.files import installed_version
from perdollar.profile.model import MemoryBreakdown, OperatorRecord, Profile

_SCHEMA = 1


def profile_to_dict(profile: Profile) -> dict[str, Any]:
    payload = asdict(profile)
    payload["operators"] = [asdict(op) for op in profile.operators]
    return payload


def profile_from_dict(payload: dict[str, Any]) -> Profile:
    ops = tuple(
        OperatorRecord(**{**op, "gemm_mnk": tuple(op["gemm_mnk"]) if op.get("gemm_mnk") else None})
        for op in payload["operators"]
    )
    fields = {k: v for k, v in payload.items() if k not in ("operators", "memory", "unclassified_ops")}
    return Profile(
        **fields,
        operators=ops,
        memory=MemoryBreakdown(**payload["memory"]),
        unclassified_ops=tuple(payload.get("unclassified_ops", ())),
    )


KIND = "profiles"
# What shapes a reference's trace: the workloads, their models and the tracer.
_CODE = ("profile", "workload")


def _path(fingerprint: str) -> Path:
    inputs = {"schema": _SCHEMA, "fingerprint": fingerprint, "torch": installed_version("torch")}
    return cache.entry_path(KIND, cache.entry_key(inputs, _CODE))


def load(fingerprint: str) -> Profile | None:
    """The profile kept for ``fingerprint`` under this torch and this code, or None."""
    document = cache.read_json(_path(fingerprint))
    try:
        profile = profile_from_dict(document) if isinstance(document, dict) else None
    except (ValueError, KeyError, TypeError):
        return None
    if profile is None:
        return None
    return profile if profile.workload_fingerprint == fingerprint else None


def save(profile: Profile) -> None:
    cache.write_json(_path(profile.workload_fingerprint), profile_to_dict(profile))
