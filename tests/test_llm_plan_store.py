"""Plan searches kept in the cache folder: the same frame again without searching, bit for bit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from perdollar import cache, catalog
from perdollar.predict.llm import frame as llm_frame
from perdollar.predict.llm import search_store
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.workload.llm import load_llm_workload

NODE_COUNTS = (1, 2)
# Each test starts from an empty cache of its own: what it counts is its own searches.
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The clusters searched from here on (not read back from the cache folder)."""
    made: list[tuple[Any, ...]] = []
    search = llm_frame._search

    def counted(*args: Any) -> Any:
        made.append(args[1:4])
        return search(*args)

    monkeypatch.setattr(llm_frame, "_search", counted)
    return made


def kept_files() -> list[Path]:
    return sorted(cache.kind_dir(search_store.KIND).glob("*.json"))


def test_a_kept_search_gives_the_same_frame_without_searching(searches: list[tuple[Any, ...]]) -> None:
    workload, bundled = load_llm_workload("llama-3.1-8b"), catalog.load()
    first = llm_prediction_frame(workload, bundled, NODE_COUNTS)
    made = len(searches)
    assert made > 10 and len(kept_files()) == 1
    again = llm_prediction_frame(workload, bundled, NODE_COUNTS)
    assert len(searches) == made, "every cluster was kept, none should be searched again"
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    assert first["fits"].any()


def test_other_settings_are_searched_and_kept_apart(searches: list[tuple[Any, ...]]) -> None:
    workload, bundled = load_llm_workload("llama-3.1-8b"), catalog.load()
    llm_prediction_frame(workload, bundled, NODE_COUNTS)
    made = len(searches)
    slower = LLMEfficiency(gemm_efficiency=0.5)
    kept = llm_prediction_frame(workload, bundled, NODE_COUNTS, efficiency=slower)
    assert len(searches) == 2 * made and len(kept_files()) == 2
    fresh = llm_prediction_frame(workload, bundled, NODE_COUNTS, efficiency=slower, keep=False)
    pd.testing.assert_frame_equal(kept, fresh, check_exact=True)


def test_a_damaged_kept_file_is_searched_again_and_replaced(searches: list[tuple[Any, ...]]) -> None:
    workload, bundled = load_llm_workload("llama-3.1-8b"), catalog.load()
    first = llm_prediction_frame(workload, bundled, (1,))
    made = len(searches)
    (path,) = kept_files()
    path.write_text('{"not": "a search"')
    again = llm_prediction_frame(workload, bundled, (1,))
    assert len(searches) == 2 * made
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    assert path.read_text().startswith("{") and len(path.read_text()) > 1000


def test_without_keep_nothing_is_written() -> None:
    llm_prediction_frame(load_llm_workload("llama-3.1-8b"), catalog.load(), (1,), keep=False)
    assert kept_files() == []


def test_searches_kept_by_other_code_are_not_used(
    searches: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch
) -> None:
    workload, bundled = load_llm_workload("llama-3.1-8b"), catalog.load()
    llm_prediction_frame(workload, bundled, (1,))
    made = len(searches)
    monkeypatch.setattr(cache, "code_digest", lambda parts: "an edited predictor")
    llm_prediction_frame(workload, bundled, (1,))
    assert len(searches) == 2 * made and len(kept_files()) == 2
