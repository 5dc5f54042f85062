"""Concurrent writers lose nothing; a writer killed mid-transaction leaves the store consistent."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fixtures.store.bench import needs_slow_opt_in, run_concurrent_benches
from perdollar.store import open_store
from perdollar.store.engine import make_engine, parse_url

WRITER = Path(__file__).parent / "fixtures" / "store" / "writer.py"


def _spawn(url: str, count: int, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WRITER), url, str(count), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_sixteen_concurrent_writer_processes_lose_nothing(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite'}"  # created and migrated by the writers themselves
    writers = [_spawn(url, 4, f"w{i}") for i in range(16)]
    committed: set[str] = set()
    for writer in writers:
        out, err = writer.communicate(timeout=240)
        assert writer.returncode == 0, err
        committed |= {line.split()[1] for line in out.splitlines() if line.startswith("committed")}
    assert len(committed) == 16 * 4
    with open_store(url) as store:
        stored = {e.id for e in store.list_history(kind="measurement")}
    assert stored == committed


@pytest.mark.slow
@needs_slow_opt_in
def test_sixteen_concurrent_bench_processes_into_one_sqlite_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'bench.sqlite'}"
    results = run_concurrent_benches(url)
    assert len(results) == 16
    with open_store(url) as store:
        stored = store.list_history(workload="mlp", kind="measurement")
    assert len(stored) == 16


@pytest.mark.parametrize("kill_while", ["hanging-in-transaction", "committing"])
def test_sigkill_mid_transaction_keeps_every_committed_row(tmp_path: Path, kill_while: str) -> None:
    path = tmp_path / "crash.sqlite"
    url = f"sqlite:///{path}"
    args = ("crash", "--then-hang") if kill_while == "hanging-in-transaction" else ("crash",)
    writer = _spawn(url, 40 if kill_while == "hanging-in-transaction" else 100_000, *args)
    assert writer.stdout is not None
    committed: list[str] = []
    for line in writer.stdout:
        if line.startswith("committed"):
            committed.append(line.split()[1])
        if line.startswith("in-transaction") or (kill_while == "committing" and len(committed) >= 60):
            break
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    assert writer.returncode == -signal.SIGKILL
    assert len(committed) >= 40

    with open_store(url) as store:
        stored = {e.id for e in store.list_history(kind="measurement")}
        assert store.list_history(workload="uncommitted") == []
    assert set(committed) <= stored  # every committed row survived the kill
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _open_when_released(url: str, start: Any, results: Any) -> None:
    start.wait()
    try:
        with make_engine(parse_url(url)).connect() as connection:
            connection.exec_driver_sql("SELECT 1")
        results.put("ok")
    except Exception as error:  # reported to the parent, which asserts on it
        results.put(repr(error))


def test_processes_opening_a_new_sqlite_store_at_the_same_instant_all_get_in(tmp_path: Path) -> None:
    """Switching a new file to WAL is answered "database is locked" without waiting; sixteen
    processes released together on a fresh file, thirty times over, must all connect."""
    context = multiprocessing.get_context("fork")
    failures = []
    for trial in range(30):
        url = f"sqlite:///{tmp_path / f'fresh{trial}.sqlite'}"
        start, results = context.Barrier(16), context.Queue()
        openers = [context.Process(target=_open_when_released, args=(url, start, results)) for _ in range(16)]
        for opener in openers:
            opener.start()
        failures += [outcome for outcome in (results.get(timeout=120) for _ in openers) if outcome != "ok"]
        for opener in openers:
            opener.join(timeout=60)
    assert failures == []
