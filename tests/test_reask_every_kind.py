"""Every kind of question that is stored can be asked again and gives the same answer.

Through the command line as a user runs it, with a real SQLite file: each question is stored by
``recommend``, asked again by ``history reevaluate`` (which stores today's answer too) and
rendered by ``report --last``. On the same catalog the re-asked answer must be the first one:
the same question, the same ranked candidates and the same figures.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_perdollar
from perdollar.jsonable import to_jsonable
from perdollar.store import open_store

ROWS_COMPARED = 10

STORED_KINDS: dict[str, tuple[str, ...]] = {
    "training": ("recommend", "mlp", "--samples", "1e9", "--deadline", "72h"),
    "language-model training with a plan": ("recommend", "llama-3.1-8b", "--tokens", "2e10"),
    "serving": ("recommend", "mlp", "--inference", "--qps", "500", "--p95-ms", "10"),
    "language-model serving": (
        "recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--input-tokens", "1000",
        "--output-tokens", "300", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50",
    ),
}  # fmt: skip

COMPARE = ("compare", "mlp", "2x g5.xlarge spot", "1x g5.12xlarge on-demand", "--samples", "1e9")


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory for the module, so each workload is traced once."""
    return tmp_path_factory.mktemp("perdollar-reask-home")


def perdollar(home: Path, *arguments: str) -> dict[str, Any]:
    # PERDOLLAR_STORE is unset for every test (conftest); each run names its store with --store.
    done = run_perdollar(*arguments, "--json", env={"PERDOLLAR_HOME": str(home)}, columns=200)
    assert done.returncode == 0, f"perdollar {' '.join(arguments)}: {done.stderr[-2000:]}"
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def stored_answer(url: str, recommendation_id: str) -> dict[str, Any]:
    with open_store(url, create=False) as store:
        answer: dict[str, Any] = to_jsonable(
            store.get_stored_recommendation(recommendation_id).recommendation
        )
    return answer


def figure_changes(first: Any, again: Any, where: str) -> list[str]:
    """Every number, text or shape in ``again`` that is not the one in ``first`` (numbers within 1e-9)."""
    if isinstance(first, dict) and isinstance(again, dict):
        if sorted(first) != sorted(again):
            return [f"{where}: keys {sorted(again)} instead of {sorted(first)}"]
        return [
            change for key in first for change in figure_changes(first[key], again[key], f"{where}.{key}")
        ]
    if isinstance(first, list) and isinstance(again, list):
        if len(first) != len(again):
            return [f"{where}: {len(again)} items instead of {len(first)}"]
        return [change for i, pair in enumerate(zip(first, again, strict=True))
                for change in figure_changes(*pair, f"{where}[{i}]")]  # fmt: skip
    numbers = (int, float)
    if isinstance(first, numbers) and isinstance(again, numbers) and not isinstance(first, bool):
        same = math.isclose(first, again, rel_tol=1e-9, abs_tol=0.0)
    else:
        same = first == again
    return [] if same else [f"{where}: {again!r}, was {first!r}"]


@pytest.mark.parametrize("kind", list(STORED_KINDS))
def test_a_stored_question_asked_again_gives_the_same_answer(
    kind: str, shared_home: Path, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    first = perdollar(shared_home, *STORED_KINDS[kind], "--store", url)
    first_id = first.get("id") or first.get("recommendation_id")
    assert first_id, f"{kind}: the answer was not stored (keys {sorted(first)})"

    again = perdollar(shared_home, "history", "reevaluate", first_id, "--store", url)
    assert (again["stored_id"], again["flipped"]) == (first_id, False), again["summary"]
    assert again["new_top"] == again["old_top"] and again["new_id"] not in (None, first_id)

    page = tmp_path / "report.html"
    rendered = perdollar(shared_home, "report", "--last", "--store", url, "-o", str(page))
    assert rendered["id"] == again["new_id"]
    assert html.escape(again["new_top"]) in page.read_text()

    stored_first, asked_again = stored_answer(url, first_id), stored_answer(url, again["new_id"])
    top_label = first["estimates"][0]["label"] if "estimates" in first else first["deployments"][0]["label"]
    assert stored_first["estimates"][0]["label"] == top_label == again["new_top"]
    changes = figure_changes(stored_first["question"], asked_again["question"], "question")
    changes += figure_changes(
        stored_first["estimates"][:ROWS_COMPARED], asked_again["estimates"][:ROWS_COMPARED], "estimates"
    )
    assert not changes, f"{kind} asked again:\n" + "\n".join(changes)


def test_a_stored_comparison_can_be_asked_again(shared_home: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.db'}"
    first = perdollar(shared_home, *COMPARE, "--store", url)
    first_id = first.get("id") or first.get("recommendation_id")
    assert first_id, f"compare: the answer was not stored (keys {sorted(first)})"
    again = perdollar(shared_home, "history", "reevaluate", first_id, "--store", url)
    assert (again["stored_id"], again["flipped"]) == (first_id, False), again["summary"]
    page = tmp_path / "report.html"
    rendered = perdollar(shared_home, "report", "--last", "--store", url, "-o", str(page))
    assert rendered["id"] == again["new_id"]
    stored_first, asked_again = stored_answer(url, first_id), stored_answer(url, again["new_id"])
    # The stored comparison keeps its configurations, the best first, and asks them again alike.
    assert stored_first["question"]["configurations"] == list(COMPARE[2:4])
    best = first["comparison"]["estimates"][first["comparison"]["best"]]["label"]
    assert stored_first["estimates"][0]["label"] == best == again["new_top"]
    assert html.escape(best) in page.read_text()
    changes = figure_changes(stored_first["question"], asked_again["question"], "question")
    changes += figure_changes(stored_first["estimates"], asked_again["estimates"], "estimates")
    assert not changes, "compare asked again:\n" + "\n".join(changes)
