"""Today's answers to a fixed set of questions of every kind, pinned within a relative 1e-6.

The golden file ``tests/data/pinned_answers.json`` holds, for each question of
``tests/pinned_figures.py``, the ranked rows' labels and key figures that ``perdollar … --json``
printed on the bundled catalog. Code that only moves things around must leave every one of them
where it was; an answer that moves on purpose (a new catalog, refitted parameters, a better model)
is written again with ``python benchmarks/pin_answers.py --write`` and the reason goes in the
commit. All questions share one data directory, so each workload is traced once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pinned_figures import GOLDEN, QUESTIONS, ask, differences, ranked_rows

PINNED: dict[str, Any] = json.loads(GOLDEN.read_text())


@pytest.fixture(scope="module")
def shared_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("perdollar-pinned-home")


def test_the_golden_file_pins_exactly_the_questions_asked() -> None:
    assert {name: tuple(answer["arguments"]) for name, answer in PINNED.items()} == QUESTIONS, (
        "the golden file was written for other questions: run `python benchmarks/pin_answers.py --write`"
    )


@pytest.mark.parametrize("question", list(QUESTIONS))
def test_the_answer_is_the_pinned_one(question: str, shared_home: Path) -> None:
    today = ranked_rows(ask(QUESTIONS[question], shared_home))
    changed = differences(question, PINNED[question]["rows"], today)
    assert not changed, "\n".join(changed)


def test_a_moved_figure_is_named_with_its_question_row_and_key() -> None:
    question = "vision training"
    pinned = PINNED[question]["rows"]
    moved = json.loads(json.dumps(pinned))
    second = moved["estimates"][1]
    second["expected_cost_usd"] *= 1 + 1e-5
    assert differences(question, pinned, moved) == [
        f"vision training: estimates row 2 ({second['label']}): expected_cost_usd is "
        f"{second['expected_cost_usd']!r}, was {pinned['estimates'][1]['expected_cost_usd']!r}"
    ]
    nudged = json.loads(json.dumps(pinned))
    nudged["estimates"][1]["expected_cost_usd"] *= 1 + 1e-8
    assert differences(question, pinned, nudged) == []
