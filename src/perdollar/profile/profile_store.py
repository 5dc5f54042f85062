"""Traced profiles of the built-in reference workloads kept on disk, so that asking about
``vit-b16`` again neither imports torch nor traces (a trace of a vision model takes seconds).

One JSON file per profile, keyed by the workload's fingerprint, the installed torch and a digest
of the code that builds and traces the references: a new torch or a changed tracer or model
traces again instead of reading a stale file. A user's own workload is never kept here (its file
can change while its fingerprint does not). An unreadable file is traced again; a read-only or
full disk only costs the next process a trace.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from perdollar.files import installed_version, keep_json
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


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    """The source of what shapes a reference's trace: the workloads, their models and the tracer."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for folder in ("profile", "workload", "workload/references"):
        for path in sorted((package / folder).glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _torch_version() -> str:
    return installed_version("torch")


def _path(fingerprint: str) -> Path:
    from perdollar.paths import data_dir

    payload = {"schema": _SCHEMA, "fingerprint": fingerprint, "torch": _torch_version()}
    payload["code"] = _code_digest()
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]
    return data_dir() / "profiles" / f"{key}.json"


def load(fingerprint: str) -> Profile | None:
    """The profile kept for ``fingerprint`` under this torch and this code, or None."""
    try:
        profile = profile_from_dict(json.loads(_path(fingerprint).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return profile if profile.workload_fingerprint == fingerprint else None


def save(profile: Profile) -> None:
    keep_json(_path(profile.workload_fingerprint), profile_to_dict(profile))
