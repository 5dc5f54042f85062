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
from collections.abc import Mapping
from importlib import resources

from perdollar import cache
from perdollar.files import installed_version
from perdollar.profile import stored_fields
from perdollar.profile.llm_trace import LayerTrace
from perdollar.workload.llm.decoder import DecoderArchitecture

_SCHEMA = 5  # 2: saved fused and eager; 3: under selective checkpointing; 4: chain traffic; 5: half weights


def _shape(
    arch: DecoderArchitecture, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> dict[str, object]:
    return {
        "schema": _SCHEMA,
        "architecture": arch.trace_identity(),
        "micro_batch": micro_batch,
        "seq_len": seq_len,
        "precision": precision,
        "train_base": train_base,
    }


def _digest(payload: Mapping[str, object]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:24]


KIND = "llm-traces"
# What shapes a traced layer: the tracer and the architectures it builds.
_CODE = ("profile", "workload")


def trace_key(
    arch: DecoderArchitecture, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> str:
    """The key of a trace made here, with this machine's torch and transformers."""
    payload = _shape(arch, micro_batch, seq_len, precision, train_base)
    versions = {package: installed_version(package) for package in ("torch", "transformers")}
    return cache.entry_key({**payload, **versions}, _CODE)


def shipped_key(
    arch: DecoderArchitecture, micro_batch: int, seq_len: int, precision: str, train_base: bool
) -> str:
    """The key of a trace shipped with the package (made once, with the versions the file records)."""
    return _digest(_shape(arch, micro_batch, seq_len, precision, train_base))


SHIPPED_FILE = "data/llm_traces.json.gz"


@functools.lru_cache(maxsize=1)
def _shipped() -> dict[str, object]:
    try:
        blob = resources.files("perdollar.profile").joinpath(SHIPPED_FILE).read_bytes()
        return dict(json.loads(gzip.decompress(blob))["traces"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def load_shipped(key: str) -> LayerTrace | None:
    """The shipped trace under ``key``, or None."""
    document = _shipped().get(key)
    if document is None:
        return None
    try:
        return layer_trace(stored_fields.mapping(document, key))
    except (ValueError, KeyError, TypeError):
        return None  # traced again


def as_document(trace: LayerTrace) -> dict[str, object]:
    return {
        **{field.name: getattr(trace, field.name) for field in dataclasses.fields(trace)},
        "layer_ops": [dataclasses.asdict(op) for op in trace.layer_ops],
        "other_ops": [dataclasses.asdict(op) for op in trace.other_ops],
    }


def layer_trace(document: Mapping[str, object]) -> LayerTrace:
    """The :class:`LayerTrace` a document holds; TypeError or KeyError when it holds none."""
    unknown = set(document) - set(LayerTrace.__dataclass_fields__)
    if unknown:
        raise TypeError(f"a stored layer trace has fields {sorted(unknown)} that a layer trace lacks")

    def number_or(key: str, default: float) -> float:
        return stored_fields.number(document, key) if key in document else default

    return LayerTrace(
        micro_batch=stored_fields.whole(document, "micro_batch"),
        seq_len=stored_fields.whole(document, "seq_len"),
        layer_ops=tuple(stored_fields.operator_record(v) for v in stored_fields.items(document, "layer_ops")),
        other_ops=tuple(stored_fields.operator_record(v) for v in stored_fields.items(document, "other_ops")),
        layer_saved_bytes=stored_fields.number(document, "layer_saved_bytes"),
        other_saved_bytes=stored_fields.number(document, "other_saved_bytes"),
        hidden_state_bytes=stored_fields.number(document, "hidden_state_bytes"),
        layer_saved_eager_bytes=number_or("layer_saved_eager_bytes", 0.0),
        other_saved_eager_bytes=number_or("other_saved_eager_bytes", 0.0),
        layer_saved_selective_bytes=number_or("layer_saved_selective_bytes", 0.0),
        layer_fused_traffic_share=number_or("layer_fused_traffic_share", 1.0),
        other_fused_traffic_share=number_or("other_fused_traffic_share", 1.0),
    )


def load(key: str) -> LayerTrace | None:
    """The traced layer stored under ``key``, or None (none, or an unreadable file)."""
    document = cache.read_json(cache.entry_path(KIND, key))
    if not isinstance(document, dict):
        return None
    try:
        return layer_trace(document)
    except (ValueError, KeyError, TypeError):
        return None


def save(key: str, trace: LayerTrace) -> None:
    cache.write_json(cache.entry_path(KIND, key), as_document(trace))
