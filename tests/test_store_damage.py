"""Damaged rows in a real SQLite store: skipped with a warning naming them, listed by `history --check`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli_runner import run_perdollar


@pytest.fixture(scope="module")
def healthy_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two measurements and two recommendations of mlp, made by the real commands."""
    store = tmp_path_factory.mktemp("store") / "results.db"
    for args in (
        ("bench", "mlp", "--duration", "1"),
        ("bench", "mlp", "--duration", "1"),
        ("recommend", "mlp", "--samples", "1e6"),
        ("recommend", "mlp", "--samples", "1e6"),
    ):
        done = run_perdollar(*args, store=store)
        assert done.returncode == 0, done.stderr[-1500:]
    return store


def _damaged_copy(healthy: Path, folder: Path) -> tuple[Path, dict[str, str]]:
    """A copy with a bad payload, a bad column and a recommendation missing its question."""
    store = folder / "damaged.db"
    store.write_bytes(healthy.read_bytes())
    with sqlite3.connect(store) as connection:
        measurements = [r[0] for r in connection.execute("select id from measurements order by stored_at")]
        recommendations = [
            r[0] for r in connection.execute("select id from recommendations order by created_at")
        ]
        connection.execute("update measurements set payload = '{not json' where id = ?", (measurements[0],))
        connection.execute(
            "update measurements set samples_per_second = 'fast' where id = ?", (measurements[1],)
        )
        connection.execute(
            "update recommendations set payload = ? where id = ?",
            (json.dumps({"estimates": []}), recommendations[1]),
        )
    return store, {"payload": measurements[0], "column": measurements[1], "newest": recommendations[1],
                   "older": recommendations[0]}  # fmt: skip


def test_history_check_lists_every_damaged_row_and_fails(healthy_store: Path, tmp_path: Path) -> None:
    clean = run_perdollar("history", "--check", store=healthy_store)
    assert clean.returncode == 0 and "reads back" in clean.stdout
    store, ids = _damaged_copy(healthy_store, tmp_path)
    done = run_perdollar("history", "--check", "--json", store=store)
    assert done.returncode == 1
    damaged = {row["id"]: row for row in json.loads(done.stdout)["damaged"]}
    assert set(damaged) == {ids["payload"], ids["column"], ids["newest"]}
    assert "JSONDecodeError" in damaged[ids["payload"]]["reason"]
    assert damaged[ids["newest"]]["kind"] == "recommendation"


def test_history_skips_a_damaged_row_with_a_warning_naming_it(healthy_store: Path, tmp_path: Path) -> None:
    store, ids = _damaged_copy(healthy_store, tmp_path)
    done = run_perdollar("history", "--json", store=store)
    assert done.returncode == 0, done.stderr
    listed = {entry["id"] for entry in json.loads(done.stdout)["entries"]}
    assert ids["column"] not in listed and ids["payload"] in listed  # its columns still read
    assert f"skipped the stored measurement {ids['column']}" in done.stderr
    assert "Traceback" not in done.stderr


def test_report_last_passes_over_a_damaged_newest_recommendation(healthy_store: Path, tmp_path: Path) -> None:
    store, ids = _damaged_copy(healthy_store, tmp_path)
    done = run_perdollar("report", "--last", "-o", str(tmp_path / "r.html"), "--json", store=store)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["id"] == ids["older"]
    assert f"skipped the stored recommendation {ids['newest']}" in done.stderr
    asked = run_perdollar("report", ids["newest"], "-o", str(tmp_path / "x.html"), store=store)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    assert (
        asked.stderr.strip()
        .splitlines()[-1]
        .startswith(f"perdollar: error: the stored recommendation {ids['newest']} cannot be read")
    )


def test_recommend_calibrates_from_the_readable_rows_only(healthy_store: Path, tmp_path: Path) -> None:
    store, ids = _damaged_copy(healthy_store, tmp_path)
    done = run_perdollar("recommend", "mlp", "--samples", "1e6", store=store)
    assert done.returncode == 0, done.stderr[-1500:]
    assert f"skipped the stored measurement {ids['payload']}" in done.stderr
    after = run_perdollar("history", "--check", "--json", store=store)
    damaged = {row["id"] for row in json.loads(after.stdout)["damaged"]}
    assert damaged == {ids["payload"], ids["column"], ids["newest"]}  # skipped, never rewritten


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("objective", "carbn", "unknown objective 'carbn'"),
        ("market", "ondemand", "--market 'ondemand' is not a market"),
        ("max_nodes", "two", "question.max_nodes is 'two', not a whole number"),
    ],
)
def test_a_stored_question_the_command_line_would_refuse_is_damaged(
    healthy_store: Path, tmp_path: Path, field: str, value: str, words: str
) -> None:
    store = tmp_path / "policy.db"
    store.write_bytes(healthy_store.read_bytes())
    with sqlite3.connect(store) as connection:
        row_id, text = connection.execute(
            "select id, payload from recommendations order by created_at desc"
        ).fetchone()
        payload = json.loads(text)
        payload["question"][field] = value
        connection.execute(
            "update recommendations set payload = ? where id = ?", (json.dumps(payload), row_id)
        )
    checked = run_perdollar("history", "--check", "--json", store=store)
    assert checked.returncode == 1
    damaged = json.loads(checked.stdout)["damaged"]
    assert [(row["id"], words in row["reason"]) for row in damaged] == [(row_id, True)]
    again = run_perdollar("history", "reevaluate", row_id, store=store)
    assert again.returncode == 2 and "Traceback" not in again.stderr
    line = again.stderr.strip().splitlines()[-1]
    assert line.startswith(f"perdollar: error: stored row {row_id} is damaged: {words}")
