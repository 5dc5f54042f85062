"""Traced profiles of the built-in reference workloads kept in the cache folder
(:mod:`perdollar.cache`), so that asking about ``vit-b16`` again neither imports torch nor traces
(a trace of a vision model takes seconds).

One JSON file per profile, named by the workload's fingerprint, the installed torch and the code
that builds and traces the references: a new torch or a changed tracer or model traces again
instead of reading a stale file. A user's own workload is never kept here (its file can change
while its fingerprint does not). An unreadable file is traced again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from perdollar import cache
from perdollar.files import installed_version
from perdollar.profile import stored_fields
from perdollar.profile.model import Profile

_SCHEMA = 1


def profile_to_dict(profile: Profile) -> dict[str, object]:
    payload = asdict(profile)
    payload["operators"] = [asdict(op) for op in profile.operators]
    return payload


def profile_from_dict(payload: Mapping[str, object]) -> Profile:
    """The profile a stored document holds; TypeError or KeyError when it holds none."""
    unknown = set(payload) - set(Profile.__dataclass_fields__)
    if unknown:
        raise TypeError(f"a stored profile has fields {sorted(unknown)} that a profile lacks")
    unclassified = stored_fields.items(payload, "unclassified_ops") if "unclassified_ops" in payload else ()
    if not all(isinstance(name, str) for name in unclassified):
        raise TypeError("a stored profile's unclassified_ops are not all names")
    return Profile(
        workload_name=stored_fields.text(payload, "workload_name"),
        workload_fingerprint=stored_fields.text(payload, "workload_fingerprint"),
        kind=stored_fields.text(payload, "kind"),
        batch_size=stored_fields.whole(payload, "batch_size"),
        precision=stored_fields.text(payload, "precision"),
        sample_unit=stored_fields.text(payload, "sample_unit"),
        params=stored_fields.whole(payload, "params"),
        trainable_params=stored_fields.whole(payload, "trainable_params"),
        operators=tuple(
            stored_fields.operator_record(op) for op in stored_fields.items(payload, "operators")
        ),
        memory=stored_fields.memory_breakdown(payload["memory"]),
        gradient_bytes=stored_fields.number(payload, "gradient_bytes"),
        input_bytes_per_sample=stored_fields.number(payload, "input_bytes_per_sample"),
        unclassified_ops=tuple(str(name) for name in unclassified),
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
