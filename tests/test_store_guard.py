"""The store refuses what it must not change, before the work, in one line: a read-only file,
another application's database, a path that does not exist for a command that only reads."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runner import run_perdollar


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("perdollar: error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    return errors[0]


@pytest.fixture
def read_only_store(tmp_path: Path) -> Iterator[Path]:
    """A perdollar store that this user cannot write, in a folder this user can write."""
    path = tmp_path / "results.sqlite"
    made = run_perdollar(
        "bench", "--store", f"sqlite:///{path}", "--", sys.executable, "-c", "print(1)", columns=200
    )
    assert path.exists(), made.stderr
    path.chmod(0o444)
    immutable = False
    if os.access(path, os.W_OK):  # root ignores the mode bits; an immutable file stops root too
        immutable = subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode == 0
        if not immutable:
            pytest.skip("cannot make a file read-only for this user")
    try:
        yield path
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_read_only_store_is_refused_before_bench_runs_anything(
    read_only_store: Path, tmp_path: Path
) -> None:
    ran = tmp_path / "workload-ran"
    script = f"open({str(ran)!r}, 'w').close(); print('5 samples/second')"
    done = run_perdollar(
        "bench", "--store", f"sqlite:///{read_only_store}", "--", sys.executable, "-c", script, columns=200
    )
    assert done.returncode == 2
    assert "cannot be written" in _one_line_error(done)
    assert not ran.exists()


def test_a_read_only_store_is_refused_before_recommend_works(read_only_store: Path) -> None:
    done = run_perdollar(
        "recommend", "mlp", "--samples", "1e9", "--store", f"sqlite:///{read_only_store}", columns=200
    )
    assert done.returncode == 2
    assert "cannot be written" in _one_line_error(done)
    assert done.stdout == ""


def test_a_store_lost_during_the_work_still_prints_the_result(tmp_path: Path) -> None:
    store = tmp_path / "results.sqlite"
    # The workload itself spoils the store after the check: the result must still be shown.
    script = f"print('5 samples/second'); open({str(store)!r}, 'w').write('not a database' * 100)"
    done = run_perdollar(
        "bench", "--json", "--store", f"sqlite:///{store}", "--", sys.executable, "-c", script, columns=200
    )
    assert done.returncode == 2
    assert "not stored" in _one_line_error(done)
    document = json.loads(done.stdout)
    assert document["samples_per_second"]["median"] == 5.0 and document["id"] is None


def _foreign_database(path: Path) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        connection.execute("INSERT INTO invoices (total) VALUES (12.5)")
    connection.close()


@pytest.mark.parametrize("command", ["history", "bench"])
def test_another_applications_database_is_refused_and_left_unchanged(tmp_path: Path, command: str) -> None:
    path = tmp_path / "app.sqlite"
    _foreign_database(path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    args = ["--", sys.executable, "-c", "print('5 samples/second')"] if command == "bench" else []
    done = run_perdollar(command, "--store", f"sqlite:///{path}", *args, columns=200)
    assert done.returncode == 2
    assert "not a perdollar store" in _one_line_error(done)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]  # no -wal, -shm or lock file
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    connection.close()


def test_another_applications_alembic_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.sqlite"
    _foreign_database(path)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)")
        connection.execute("INSERT INTO alembic_version VALUES ('ae1027a6acf')")
    connection.close()
    done = run_perdollar("history", "--store", f"sqlite:///{path}", columns=200)
    assert done.returncode == 2 and "not a perdollar store" in _one_line_error(done)


def test_history_at_a_mistyped_path_creates_nothing(tmp_path: Path) -> None:
    done = run_perdollar("history", "--store", f"sqlite:///{tmp_path / 'resluts.sqlite'}", columns=200)
    assert done.returncode == 2 and "no store at" in _one_line_error(done)
    assert list(tmp_path.iterdir()) == []


def test_history_of_the_default_store_before_any_result_creates_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run_perdollar("history", env={"PERDOLLAR_HOME": str(home)}, columns=200)
    assert done.returncode == 0 and "Nothing stored yet" in done.stdout
    assert not any(p.suffix == ".sqlite" for p in home.rglob("*"))
