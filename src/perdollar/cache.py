"""perdollar's derived caches: one folder, one way to name what is kept in it.

What lives here is work perdollar can always do again: traced profiles and decoder layers, plan
searches, the checked catalog, transformers' parameter counts of a config. Never a measurement, a
recommendation or a catalog snapshot: those are the user's data (:mod:`perdollar.paths`), so
deleting this folder costs the next question time, never an answer or a result.

The folder is ``PERDOLLAR_CACHE``, else the platform's user cache folder. One subfolder per kind
of entry. An entry's name is a digest of perdollar's version, the source (and data) of the package
folders whose code shapes the entry, and the inputs that made it: an edited model, a refitted
parameter or another library version gives another name, so nothing earlier is ever served. A
missing, unreadable or damaged entry is made again; a read-only or full disk only costs the next
process the work.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path

import platformdirs

import perdollar
from perdollar.errors import PerdollarWarning

CACHE_ENV = "PERDOLLAR_CACHE"
_PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path:
    """The cache folder. Made by the first entry written into it; where it cannot be (a file is in
    the way, no permission), nothing is kept and every question is answered all the same."""
    override = os.environ.get(CACHE_ENV)
    base = Path(override) if override else Path(platformdirs.user_cache_dir("perdollar", appauthor=False))
    if base.exists() and not base.is_dir():
        _warn_once(f"{CACHE_ENV if override else 'the cache folder'} {base} is not a folder: nothing is kept "
                   "between runs, so each one traces and checks again — point it at a folder")  # fmt: skip
    return base


@functools.cache
def _warn_once(message: str) -> None:
    warnings.warn(PerdollarWarning(message), stacklevel=3)


def kind_dir(kind: str) -> Path:
    """The folder of one kind of entry (not made here: a reader of a missing folder finds nothing)."""
    return cache_dir() / kind


@functools.cache
def code_digest(parts: tuple[str, ...]) -> str:
    """A digest of the package's files under ``parts`` (folders, searched whole, or single files,
    relative to the package): every source and data file whose change can change an entry."""
    digest = hashlib.sha256()
    for part in parts:
        target = _PACKAGE / part
        files = [target] if target.is_file() else sorted(p for p in target.rglob("*") if p.is_file())
        for path in files:
            if "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            digest.update(str(path.relative_to(_PACKAGE)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def entry_key(inputs: Mapping[str, object], code: Iterable[str] = ()) -> str:
    """The name of the entry made from ``inputs`` by the code under ``code``: perdollar's version,
    that code's digest and the inputs (anything ``repr`` renders stably) in one digest."""
    payload = {"perdollar": perdollar.__version__, "code": code_digest(tuple(code)), "inputs": dict(inputs)}
    text = json.dumps(payload, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def entry_path(kind: str, key: str, suffix: str = ".json") -> Path:
    return kind_dir(kind) / f"{key}{suffix}"


def write_json(path: Path, document: object) -> None:
    """Keep ``document`` at ``path`` atomically (a concurrent reader sees the whole file or none); a
    read-only or full disk only costs the next process the work again. A process killed midway
    leaves a ``.tmp`` file, which no reader takes for an entry."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out)
            os.replace(temporary, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)


def read_json(path: Path) -> object:
    """The JSON document at ``path``, or None when it is missing or cannot be read whole (the
    caller narrows it to the shape it kept)."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
