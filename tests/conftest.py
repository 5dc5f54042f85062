"""Shared test fixtures.

Every test gets its own perdollar home (the user's data: stores, snapshots, sweeps), so no real
user data is touched and no test sees another's results. The derived caches (traced profiles,
plan searches, the checked catalog) are shared by the whole run instead: one folder made fresh
for each run, so it cannot be stale, and kept warm from the first test that fills an entry.
Tests of the caches themselves ask for ``private_cache``.

Tests marked ``slow`` run only with ``--slow`` (CI runs them as a set of their own). Tests marked
``exclusive`` compare a real training run's timing with its own figures, which another worker's
load would skew: they run only when nothing runs beside them (``pytest --slow -m exclusive -n 0``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False, help="also run the tests marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.skip(reason="slow: run with --slow (CI does)")
    beside_others = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1
    alone = pytest.mark.skip(reason="times real training: run alone with `pytest --slow -m exclusive -n 0`")
    for item in items:
        if item.get_closest_marker("slow") is not None and not config.getoption("--slow"):
            item.add_marker(slow)
        elif item.get_closest_marker("exclusive") is not None and beside_others:
            item.add_marker(alone)


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's cache folder, one for all workers (under xdist each worker has a base of its own
    inside the run's folder)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / "perdollar-cache"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, shared_cache: Path
) -> Path:
    home = tmp_path_factory.mktemp("perdollar-home")
    monkeypatch.setenv("PERDOLLAR_HOME", str(home))
    monkeypatch.setenv("PERDOLLAR_CACHE", str(shared_cache))
    monkeypatch.delenv("PERDOLLAR_STORE", raising=False)
    return home


@pytest.fixture
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache folder of this test's own, for the tests of the caches themselves."""
    folder = tmp_path_factory.mktemp("perdollar-cache")
    monkeypatch.setenv("PERDOLLAR_CACHE", str(folder))
    return folder


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("the shared development data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture(scope="module")
def report_page() -> Iterator[Any]:
    """One headless Chromium page per test module, for the tests that read a report as a reader
    sees it; skipped without Chromium, a failure under CI (where .ci/run installs it)."""
    from fixtures.store.cdp import chromium_binary, headless_page
    from fixtures.store.report_page import WIDTH

    if chromium_binary() is None:
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing under CI (.ci/run installs the chromium package)")
        pytest.skip("no Chromium here (apt-get install chromium)")
    with headless_page(width=WIDTH, height=900) as opened:
        yield opened
