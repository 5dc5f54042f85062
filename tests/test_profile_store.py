"""A built-in reference's profile at a shape the package does not ship is kept in the cache folder:
the next process reads it without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from perdollar import cache
from perdollar.profile import profile_store
from perdollar.profile.profiler import _traced
from perdollar.workload import load_workload

PROFILE_IN_A_FRESH_PROCESS = """
import json, sys
from perdollar.profile.profiler import profile_workload
from perdollar.workload import load_workload
profile = profile_workload(load_workload(sys.argv[1], batch_size=int(sys.argv[2]) if sys.argv[2:] else None))
print(json.dumps({"flops": profile.flops_per_step, "fingerprint": profile.workload_fingerprint,
                  "torch_imported": "torch" in sys.modules}))
"""


# Not a shape the package ships (those are read without a trace even the first time).
UNSHIPPED_BATCH = "48"


def _profile_in_child(cache: Path, name: str, *batch: str) -> dict:
    # A fresh interpreter: whether torch was imported is the process's own state.
    done = subprocess.run(
        [sys.executable, "-c", PROFILE_IN_A_FRESH_PROCESS, name, *batch],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PERDOLLAR_CACHE": str(cache)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_second_process_reads_the_kept_profile_and_never_imports_torch(tmp_path: Path) -> None:
    first = _profile_in_child(tmp_path, "mlp", UNSHIPPED_BATCH)
    assert first["torch_imported"]  # traced
    (kept,) = (tmp_path / profile_store.KIND).glob("*.json")
    second = _profile_in_child(tmp_path, "mlp", UNSHIPPED_BATCH)
    assert not second["torch_imported"]
    assert second["flops"] == first["flops"] > 0 and second["fingerprint"] == first["fingerprint"]
    # A damaged file is traced again and replaced, never believed.
    kept.write_text("{not json")
    third = _profile_in_child(tmp_path, "mlp", UNSHIPPED_BATCH)
    assert third["torch_imported"] and third["flops"] == first["flops"]
    assert json.loads(kept.read_text())["workload_fingerprint"] == first["fingerprint"]


def test_a_shipped_shape_is_read_without_torch_even_the_first_time(tmp_path: Path) -> None:
    first = _profile_in_child(tmp_path, "mlp")
    assert not first["torch_imported"] and first["flops"] > 0
    (kept,) = (tmp_path / profile_store.KIND).glob("*.json")  # kept for the next process
    assert json.loads(kept.read_text())["workload_fingerprint"] == first["fingerprint"]


def test_a_kept_profile_round_trips_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_CACHE", str(tmp_path))
    profile = _traced(load_workload("mlp"))
    profile_store.save(profile)
    assert profile_store.load(profile.workload_fingerprint) == profile
    assert profile_store.load("0" * 16) is None


def test_another_torch_or_another_tracer_does_not_read_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERDOLLAR_CACHE", str(tmp_path))
    profile = _traced(load_workload("mlp"))
    profile_store.save(profile)
    assert profile_store.load(profile.workload_fingerprint) == profile
    monkeypatch.setattr(profile_store, "installed_version", lambda package: "0.0.1")
    assert profile_store.load(profile.workload_fingerprint) is None
    monkeypatch.undo()
    monkeypatch.setenv("PERDOLLAR_CACHE", str(tmp_path))
    monkeypatch.setattr(cache, "code_digest", lambda parts: "changed")
    assert profile_store.load(profile.workload_fingerprint) is None


def test_a_users_workload_of_a_built_in_name_is_not_kept(tmp_path: Path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(
        "from perdollar.workload import Workload\n"
        "from perdollar.workload.references.small import mlp\n"
        "from perdollar.workload.references.inputs import features, cross_entropy\n"
        "from functools import partial\n"
        "def build():\n"
        "    return Workload(name='mlp', model_factory=mlp, batch_size=64, loss_fn=cross_entropy,\n"
        "                    input_factory=partial(features, width=256, classes=10),\n"
        "                    config={'width': 256, 'hidden': 1024, 'depth': 2})\n"
    )
    folder = tmp_path / "cache"
    _profile_in_child(folder, f"{script}:build")
    assert not list((folder / profile_store.KIND).glob("*.json"))


def test_a_kept_profile_with_a_field_of_the_wrong_type_is_traced_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PERDOLLAR_CACHE", str(tmp_path))
    profile = _traced(load_workload("mlp"))
    profile_store.save(profile)
    (kept,) = (tmp_path / profile_store.KIND).glob("*.json")
    document = json.loads(kept.read_text())
    document["batch_size"] = "sixty-four"  # a hand-edited file: a number became text
    kept.write_text(json.dumps(document))
    assert profile_store.load(profile.workload_fingerprint) is None
