"""Shared test fixtures: every test gets its own perdollar home, so no real user data is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("perdollar-home")
    monkeypatch.setenv("PERDOLLAR_HOME", str(home))
    monkeypatch.delenv("PERDOLLAR_STORE", raising=False)
    return home


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip("the shared development data is not beside this checkout")
    return SHARED_DATA
