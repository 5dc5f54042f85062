"""Turn what a user typed (a built-in name, ``file.py:function`` or a Workload) into a Workload."""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from perdollar.errors import PerdollarError
from perdollar.files import checked_user_file, read_user_bytes, shorten
from perdollar.sandbox import UserCodeFailed, described, in_sandbox, status_of, user_frame
from perdollar.workload.after_loading import NextInChild, Pending, load_isolated_then
from perdollar.workload.llm.workload import looks_like_llm
from perdollar.workload.references import REFERENCES
from perdollar.workload.spec import PRECISIONS, Kind, Workload
from perdollar.workload.stand_in import load_isolated

# A workload file is code a person wrote: a few kilobytes. More than this is not source to import.
WORKLOAD_FILE_MAX_BYTES = 16 * 2**20

_ALIASES = {
    "vit": "vit-b16",
    "vit-b/16": "vit-b16",
    "vit-base": "vit-b16",
    "vitb16": "vit-b16",
    "resnet-50": "resnet50",
    "resnet-152": "resnet152",
    "vgg-16": "vgg16",
    "inception3": "inception-v3",
    "inceptionv3": "inception-v3",
    "inception": "inception-v3",
    "bert": "bert-base",
    "gpt-2": "gpt2",
    "neumf": "ncf",
}


def reference_names() -> list[str]:
    return list(REFERENCES)


def _reference(name: str) -> Workload:
    key = name.strip().lower().replace("_", "-")
    key = _ALIASES.get(key, key)
    if key not in REFERENCES and looks_like_llm(name):
        # A language model (built-in or config.json) measured by bench: its config, random weights.
        from perdollar.workload.llm import load_llm_workload
        from perdollar.workload.llm.trainable import training_workload

        return training_workload(load_llm_workload(name))
    if key not in REFERENCES:
        from perdollar.workload.llm import llm_reference_names

        close = difflib.get_close_matches(key, [*REFERENCES, *llm_reference_names()], n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise PerdollarError(
            f"unknown workload {name!r}",
            f"{hint}use a built-in name ({', '.join(REFERENCES)}) or path/to/file.py:function",
        )
    return REFERENCES[key].build()


def names_workload_file(spec: str) -> bool:
    """``spec`` is ``path/to/file.py:function``: loading it runs that file's code."""
    path_text, _, function_name = spec.rpartition(":")
    return path_text.endswith(".py") and function_name.isidentifier()


def canonical_spec(spec: str) -> str:
    """The spec a question is stored under: a workload file by its absolute path, so that it loads
    again from any folder (``history reevaluate`` elsewhere); every other spec as given."""
    if not names_workload_file(spec):
        return spec
    path_text, _, function_name = spec.rpartition(":")
    path = Path(path_text).expanduser()
    try:
        return f"{path.resolve()}:{function_name}" if path.is_file() else spec
    except OSError:  # a name the file system refuses: the loader reports it
        return spec


def _file_and_function(spec: str) -> tuple[str, Path, str]:
    path_text, _, function_name = spec.rpartition(":")
    path = Path(path_text).expanduser()
    if not function_name.isidentifier():
        raise PerdollarError(f"{spec!r} does not name a function", "write it as path/to/file.py:function")
    try:
        present = path.exists()
    except OSError:  # a name the file system refuses (too long, say)
        present = False
    if not present:
        raise PerdollarError(
            f"workload file {shorten(path_text)!r} does not exist", "check the path (relative to here)"
        )
    checked_user_file(path, "workload file", WORKLOAD_FILE_MAX_BYTES, "give a .py file")
    return path_text, path, function_name


def _from_file(
    spec: str, timeout_s: float | None, options: Mapping[str, object], next_in_child: NextInChild | None
) -> tuple[Workload, Pending | None]:
    _file_and_function(spec)  # a mistyped path is a usage error, found before any process starts
    if in_sandbox():
        return import_from_file(spec), None
    if next_in_child is not None:
        return load_isolated_then(spec, options, next_in_child, timeout_s=timeout_s)
    return load_isolated(spec, timeout_s=timeout_s), None


def import_from_file(spec: str) -> Workload:
    """Import the user's file in this process: only ever called in a sandboxed child."""
    path_text, path, function_name = _file_and_function(spec)
    source = read_user_bytes(path, "workload file", WORKLOAD_FILE_MAX_BYTES, "give a .py file")
    module_name = f"perdollar_user_workload_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    module_spec = importlib.util.spec_from_file_location(module_name, path)
    if module_spec is None or module_spec.loader is None:
        raise PerdollarError(f"cannot import {path_text!r} as Python", "give a .py file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_name] = module  # so that pickling the workload's functions can find them
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:  # the user's module can fail in any way
        raise UserCodeFailed(
            status_of(error), f"importing {path_text}", described(error), user_frame(error)
        ) from error
    function = getattr(module, function_name, None)
    if not callable(function):
        raise PerdollarError(
            f"{path_text!r} has no function {function_name!r}", "name a function defined in that file"
        )
    try:
        workload = function()
    except Exception as error:
        raise UserCodeFailed(
            status_of(error), f"calling {spec}", described(error), user_frame(error)
        ) from error
    if not isinstance(workload, Workload):
        raise PerdollarError(
            f"{spec} returned {type(workload).__name__}, not a Workload",
            "return perdollar.workload.Workload(name=..., model_factory=..., input_factory=..., "
            "batch_size=...)",
        )
    # The file's contents shape the computation, so they enter the fingerprint.
    config = {**workload.config, "source_sha256": hashlib.sha256(source).hexdigest()[:16]}
    return replace(workload, config=config, origin=spec)


def check_workload(workload: Workload) -> Workload:
    """``workload`` if its precision, kind, batch size and optimizer are valid; else a usage error."""
    if workload.precision not in PRECISIONS:
        raise PerdollarError(
            f"unknown precision {workload.precision!r}", f"use one of {', '.join(PRECISIONS)}"
        )
    if workload.kind not in ("train", "inference"):
        raise PerdollarError(f"unknown workload kind {workload.kind!r}", "use train or inference")
    if not isinstance(workload.batch_size, int) or workload.batch_size < 1:
        raise PerdollarError(
            f"batch size must be a positive integer, got {workload.batch_size!r}",
            "pass --batch-size N with N ≥ 1",
        )
    if workload.optimizer.lower() not in ("adam", "adamw", "sgd"):
        raise PerdollarError(f"unknown optimizer {workload.optimizer!r}", "use adam, adamw or sgd")
    return workload


def load_workload(
    spec: str | Workload,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    kind: Kind | None = None,
    timeout_s: float | None = None,
    next_in_child: NextInChild | None = None,
) -> Workload:
    """A built-in name (``vit-b16``), ``path/file.py:function``, or a Workload; then the overrides.

    A file is imported in a child process (``timeout_s`` bounds its import and call), never here.
    ``next_in_child``: work that child does next on the Workload, the overrides applied (see
    :mod:`perdollar.workload.after_loading`); ``timeout_s`` bounds it too.
    """
    pending = None
    if isinstance(spec, Workload):
        workload = spec
    elif not isinstance(spec, str) or not spec.strip():
        raise PerdollarError("no workload given", "name a built-in workload or path/to/file.py:function")
    elif ":" in spec or spec.endswith(".py"):
        if spec.endswith(".py"):
            raise PerdollarError(
                f"{spec!r} does not say which function returns the Workload", f"write it as {spec}:function"
            )
        options = {"batch_size": batch_size, "precision": precision, "kind": kind}
        workload, pending = _from_file(spec, timeout_s, options, next_in_child)
    else:
        workload = _reference(spec)
    if precision is not None and precision not in PRECISIONS:
        # fp8 is a precision of the language-model predictions; a run here needs an FP8 library.
        why = " (fp8 is predicted for language models, not run)" if precision.startswith("fp8") else ""
        raise PerdollarError(f"unknown precision {precision!r}{why}", f"use one of {', '.join(PRECISIONS)}")
    if kind is not None and kind not in ("train", "inference"):
        raise PerdollarError(f"unknown workload kind {kind!r}", "use train or inference")
    if batch_size is not None and (not isinstance(batch_size, int) or batch_size < 1):
        raise PerdollarError(
            f"batch size must be a positive integer, got {batch_size!r}", "pass --batch-size N with N ≥ 1"
        )
    workload = check_workload(workload.with_overrides(batch_size=batch_size, precision=precision, kind=kind))
    if pending is not None:
        pending.file_under(workload.fingerprint)
    return workload
