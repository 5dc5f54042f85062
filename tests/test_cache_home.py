"""The derived caches live in one folder apart from the user's data: deleting it changes no answer
and loses nothing stored; the built-in workloads answer without a trace."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from cli_runner import run_perdollar
from perdollar import cache, catalog
from perdollar.predict.network_serving.plans import DEFAULT_BATCH_SIZES
from perdollar.profile import profile_store, profiler, shipped
from perdollar.workload import load_workload

pytestmark = pytest.mark.usefixtures("private_cache")

# Kinds that are caches; none of them may appear in the data folder.
CACHE_KINDS = ("catalog-kept", "profiles", "llm-traces", "llm-plans", "llm-architectures")


def _answer(*args: str) -> dict[str, Any]:
    catalog._cache.clear()  # as in a new process: the catalog comes from the cache folder or its files
    done = run_perdollar(*args, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    for moving in ("created_at", "id", "report"):
        document.pop(moving, None)
    return document


@pytest.mark.parametrize(
    "question",
    [
        ("recommend", "vit-b16", "--samples", "1e9", "--deadline", "72h"),
        ("recommend", "llama-3.1-8b", "--tokens", "2e9", "--max-nodes", "1"),
    ],
    ids=["vision", "language-model"],
)
def test_deleting_the_cache_changes_no_answer_and_loses_nothing_stored(
    question: tuple[str, ...], private_cache: Path, _isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(catalog, "_cache", {})
    first = _answer(*question)
    assert (private_cache / "catalog-kept").is_dir()  # the question filled the cache
    assert not [kind for kind in CACHE_KINDS if (_isolated_home / kind).exists()]
    store = _isolated_home / "perdollar.sqlite"
    stored_bytes = store.stat().st_size
    shutil.rmtree(private_cache)
    second = _answer(*question)
    assert second == first
    assert store.stat().st_size >= stored_bytes
    listed = run_perdollar("history", "--json")
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)["entries"]
    recommendations = [row for row in entries if row["kind"] == "recommendation"]
    assert len(recommendations) == 2  # both answers kept, the one before the deletion too


def test_the_cache_folder_is_the_platforms_unless_named(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setattr(platformdirs, "user_cache_dir", lambda *a, **k: str(tmp_path / "platform-cache"))
    assert cache.cache_dir() == tmp_path / "platform-cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "named"))
    assert cache.cache_dir() == tmp_path / "named"


def test_a_cache_folder_that_cannot_be_one_answers_all_the_same_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder\n")
    monkeypatch.setenv(cache.CACHE_ENV, str(in_the_way))
    monkeypatch.setattr(catalog, "_cache", {})
    done = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--no-store", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["estimates"]
    warned = [line for line in done.stderr.splitlines() if "is not a folder" in line]
    assert len(warned) == 1 and warned[0].startswith("perdollar: warning:") and "Traceback" not in done.stderr
    assert in_the_way.read_text() == "not a folder\n"


def test_an_entry_is_named_by_version_code_and_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    key = cache.entry_key({"a": 1}, ("profile",))
    assert key == cache.entry_key({"a": 1}, ("profile",))
    assert key != cache.entry_key({"a": 2}, ("profile",))
    assert key != cache.entry_key({"a": 1}, ("workload",))
    monkeypatch.setattr(cache.perdollar, "__version__", "99.0")
    assert key != cache.entry_key({"a": 1}, ("profile",))


def test_every_built_in_shape_a_first_question_traces_is_shipped() -> None:
    assert shipped.SERVING_BATCHES == DEFAULT_BATCH_SIZES
    profiles = shipped.shipped_profiles()
    missing = []
    for name, batch, kind in shipped.default_shapes():
        workload = load_workload(name, batch_size=batch, kind=kind)  # type: ignore[arg-type]
        if workload.fingerprint not in profiles:
            missing.append(f"{name} {kind} batch {workload.batch_size}")
    assert not missing, f"run `python -m perdollar.profile.shipped`; not shipped: {missing}"


def test_a_shipped_profile_is_what_a_trace_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    workload = load_workload("mlp")
    assert shipped.shipped_profiles()[workload.fingerprint] == profiler._traced(workload)


def test_a_built_in_is_answered_from_the_shipped_profile_without_a_trace(
    monkeypatch: pytest.MonkeyPatch, private_cache: Path
) -> None:
    def no_trace(workload: Any) -> Any:
        raise AssertionError(f"traced {workload.name}")

    monkeypatch.setattr(profiler, "_traced", no_trace)
    monkeypatch.setattr(profiler, "_CACHE", {})
    workload = load_workload("vit-b16")
    profile = profiler.profile_workload(workload)
    assert profile == shipped.shipped_profile(workload.fingerprint)
    # Kept in the cache too: the next process reads that one file, not the whole shipped set.
    assert profile_store.load(workload.fingerprint) == profile
    monkeypatch.setattr(profiler, "_CACHE", {})
    monkeypatch.setattr(shipped, "shipped_profile", lambda fingerprint: no_trace(workload))
    assert profiler.profile_workload(workload) == profile
