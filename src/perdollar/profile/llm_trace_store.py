"""Traced decoder layers kept in the cache folder (:mod:`perdollar.cache`), so that a new process
prices plans without importing transformers or tracing again. One JSON file per (architecture,
micro-batch, sequence length, precision, trained base, torch and transformers versions, and the
tracer's code); an unreadable file is traced again.

The package also ships the traces of its built-in language models at their default shapes
(``data/llm_traces.json.gz``, written by :mod:`perdollar.profile.llm_trace_bundle`), keyed
without the library versions: a first ``recommend llama-3.1-8b`` then neither imports
transformers nor traces."""

from __future__ import annotations

import dataclasses
import functools
import gzip
import hashlib
import json
from importlib import resources
from typing import Any

from perdollar import cache
from perdollar.files import installed_version
from perdollar.profile.model import OperatorRecord

_SCHEMA = 5  # 2: saved fused and eager; 3: under selective checkpointing; 4: chain traffic; 5: half weights


def _shape(arch: Any, micro_batch: int, seq_len: int, precision: str, train_base: bool) -> dict[str, Any]:
    return {
        "schema": _SCHEMA,
        "architecture": arch.trace_identity(),
        "micro_batch": micro_batch,
        "seq_len": seq_len,
        "precision": precision,
        "train_base": train_base,
    }


def _digest(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


KIND = "llm-traces"
# What shapes a traced layer: the tracer and the architectures it builds.
_CODE = ("profile", "workload")


def trace_key(arch: Any, micro_batch: int, seq_len: int, precision: str, train_base: bool) -> str:
    """The key of a trace made here, with this machine's torch and transformers."""
    payload = _shape(arch, micro_batch, seq_len, precision, train_base)
    versions = {package: installed_version(package) for package in ("torch", "transformers")}
    return cache.entry_key({**payload, **versions}, _CODE)


def shipped_key(arch: Any, micro_batch: int, seq_len: int, precision: str, train_base: bool) -> str:
    """The key of a trace shipped with the package (made once, with the versions the file records)."""
    return _digest(_shape(arch, micro_batch, seq_len, precision, train_base))


SHIPPED_FILE = "data/llm_traces.json.gz"


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, Any]:
    try:
        blob = resources.files("perdollar.profile").joinpath(SHIPPED_FILE).read_bytes()
        return dict(json.loads(gzip.decompress(blob))["traces"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def load_shipped(key: str) -> dict[str, Any] | None:
    """The shipped trace under ``key`` (operators as records), or None."""
    document = _shipped().get(key)
    if document is None:
        return None
    return {
        **document,
        "layer_ops": tuple(_record(v) for v in document["layer_ops"]),
        "other_ops": tuple(_record(v) for v in document["other_ops"]),
    }


def as_document(fields: dict[str, Any]) -> dict[str, Any]:
    return {
        **fields,
        "layer_ops": [dataclasses.asdict(op) for op in fields["layer_ops"]],
        "other_ops": [dataclasses.asdict(op) for op in fields["other_ops"]],
    }


def _record(values: dict[str, Any]) -> OperatorRecord:
    mnk = values.get("gemm_mnk")
    return OperatorRecord(**{**values, "gemm_mnk": tuple(mnk) if mnk is not None else None})


def load(key: str) -> dict[str, Any] | None:
    """The stored fields of a traced layer (operators as records), or None."""
    document = cache.read_json(cache.entry_path(KIND, key))
    if not isinstance(document, dict):
        return None
    try:
        document["layer_ops"] = tuple(_record(v) for v in document["layer_ops"])
        document["other_ops"] = tuple(_record(v) for v in document["other_ops"])
        return document
    except (ValueError, KeyError, TypeError):
        return None


def save(key: str, fields: dict[str, Any]) -> None:
    cache.write_json(cache.entry_path(KIND, key), as_document(fields))
