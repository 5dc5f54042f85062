"""A killed `perdollar bench` takes its worker with it and leaves no scratch folder behind; a
workload's stray output never stops the parent reading it."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from fixtures.store.bench import perdollar_command
from perdollar.lifeline import remove_orphaned_folders
from perdollar.measure.child import parse_progress
from perdollar.measure.runner import run_benchmark

WORKLOADS = textwrap.dedent("""
    import sys
    import time

    import torch
    from perdollar.workload import Workload


    def _inputs(batch_size, device):
        return (torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device))


    class Model(torch.nn.Module):
        def __init__(self, behaviour):
            super().__init__()
            self.layer = torch.nn.Linear(8, 2)
            self.behaviour = behaviour
            self.steps = 0

        def forward(self, x):
            self.steps += 1
            if self.behaviour == "hang":
                time.sleep(3600)
            if self.behaviour == "chatty":
                if self.steps == 1:
                    print("PERDOLLAR-PROGRESS warm-up not-a-number", flush=True)
                print("x" * 2000, flush=True)  # a 64 KiB pipe fills in about 32 steps
            return self.layer(x)


    def hangs():
        return Workload(name="hangs", model_factory=lambda: Model("hang"), input_factory=_inputs,
                        batch_size=4)


    def chatty():
        return Workload(name="chatty", model_factory=lambda: Model("chatty"), input_factory=_inputs,
                        batch_size=4)
""")


@pytest.fixture(autouse=True)
def _quiet_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", "off")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture
def workloads(tmp_path: Path) -> Path:
    path = tmp_path / "workloads.py"
    path.write_text(WORKLOADS, encoding="utf-8")
    return path


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")  # a zombie has stopped running; its reaper may be slow to collect it


def _wait_for(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.2)
    return False


def _worker_of(scratch_root: Path) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "perdollar.measure.worker" in command and str(scratch_root) in command:
            return int(entry.name)
    return None


def _start_hanging_bench(workloads: Path, scratch_root: Path) -> tuple[subprocess.Popen[str], int]:
    scratch_root.mkdir()
    bench = subprocess.Popen(
        [
            *perdollar_command(),
            "bench",
            f"{workloads}:hangs",
            "--no-store",
            "--duration",
            "2",
            "--timeout",
            "600",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "TMPDIR": str(scratch_root)},
    )
    found: list[int] = []
    assert _wait_for(lambda: found.append(_worker_of(scratch_root) or 0) or found[-1], 180), "no worker"
    return bench, found[-1]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the worker through /proc")
def test_sigkill_of_bench_takes_the_hanging_worker_down(workloads: Path, tmp_path: Path) -> None:
    scratch_root = tmp_path / "tmp"
    bench, worker = _start_hanging_bench(workloads, scratch_root)
    os.kill(bench.pid, signal.SIGKILL)
    bench.wait(timeout=30)
    try:
        assert _wait_for(lambda: _gone(worker), 30), "the worker outlived bench"
    finally:
        if not _gone(worker):
            os.killpg(worker, signal.SIGKILL)
    # Nothing could clean up inside a SIGKILLed process; the next run removes what it left.
    left = list(scratch_root.glob("perdollar-bench-*"))
    assert [folder.name.split("-")[2] for folder in left] == [str(bench.pid)]
    assert remove_orphaned_folders("perdollar-bench-", scratch_root) == left
    assert list(scratch_root.glob("perdollar-bench-*")) == []


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the worker through /proc")
def test_sigterm_of_bench_kills_the_worker_and_removes_its_folder(workloads: Path, tmp_path: Path) -> None:
    scratch_root = tmp_path / "tmp"
    bench, worker = _start_hanging_bench(workloads, scratch_root)
    os.kill(bench.pid, signal.SIGTERM)
    try:
        bench.wait(timeout=60)
        assert _wait_for(lambda: _gone(worker), 30), "the worker outlived bench"
    finally:
        if not _gone(worker):
            os.killpg(worker, signal.SIGKILL)
        bench.kill()
    assert bench.returncode == 128 + signal.SIGTERM
    assert "Traceback" not in (bench.stderr.read() if bench.stderr else "")
    assert list(scratch_root.glob("perdollar-bench-*")) == []


def test_orphaned_folders_of_live_processes_are_kept(tmp_path: Path) -> None:
    mine = tmp_path / f"perdollar-bench-{os.getpid()}-abc"
    mine.mkdir()
    assert remove_orphaned_folders("perdollar-bench-", tmp_path) == []
    assert mine.exists()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("PERDOLLAR-PROGRESS warm-up 0.250\n", ("warm-up", 0.25)),
        ("PERDOLLAR-PROGRESS warm-up not-a-number\n", None),
        ("PERDOLLAR-PROGRESS warm-up\n", None),
        ("PERDOLLAR-PROGRESS warm-up nan\n", None),
        ("PERDOLLAR-PROGRESS warm-up 7\n", None),
        ("PERDOLLAR-PROGRESSIVE a 0.5\n", None),
        ("loss 0.3\n", None),
    ],
)
def test_progress_lines_are_parsed_defensively(line: str, expected: tuple[str, float] | None) -> None:
    assert parse_progress(line) == expected


def test_a_malformed_progress_line_does_not_stop_the_reader(workloads: Path) -> None:
    phases: list[str] = []
    measurement = run_benchmark(
        f"{workloads}:chatty", duration_s=3, timeout_s=120, progress=lambda phase, _f: phases.append(phase)
    )
    assert measurement.status == "ok", measurement.message
    assert measurement.samples_per_second is not None and phases
