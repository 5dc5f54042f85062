"""Child processes for benchmarks: start, watch, time out, and say what happened.

``run_child`` starts a fresh interpreter on :mod:`perdollar.measure.worker`; ``run_forked``
forks when the Workload exists only in memory. Either returns the worker's JSON result, or a
failure the parent observed itself (killed by a signal, exited without a result, timed out).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from perdollar.errors import PerdollarError
from perdollar.lifeline import child_preexec, scratch_folder, termination_raises
from perdollar.measure.bench_records import BenchResult, BenchSpec
from perdollar.measure.worker import PROGRESS_PREFIX, classify_failure

if TYPE_CHECKING:
    from perdollar.workload.spec import Workload

ProgressCallback = Callable[[str, float], None]


class _ChildWatcher:
    """Reads the child's stdout: progress lines go to the callback, the rest is kept as a tail."""

    def __init__(self, stream: IO[str] | None, progress: ProgressCallback | None) -> None:
        self.tail: deque[str] = deque(maxlen=40)
        self._stream = stream
        self._progress = progress
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        # This thread must drain the pipe until the child closes it, whatever a line holds: if it
        # stopped, the pipe would fill, the child block on its next print, and a healthy run be
        # recorded as a timeout.
        if self._stream is None:  # Popen gives a stream: stdout is a pipe
            return
        for line in iter(self._stream.readline, ""):
            progress = parse_progress(line)
            if progress is None:
                self.tail.append(line.rstrip("\n"))
            elif self._progress is not None:
                try:
                    self._progress(*progress)
                except Exception:  # a progress bar that fails must not stop the reading
                    self._progress = None


def parse_progress(line: str) -> tuple[str, float] | None:
    """(phase, fraction) of a well-formed progress line, else None (the line is plain output)."""
    if not line.startswith(PROGRESS_PREFIX):
        return None
    parts = line.split()
    if len(parts) != 3 or parts[0] != PROGRESS_PREFIX:
        return None
    try:
        fraction = float(parts[2])
    except ValueError:
        return None
    if not 0.0 <= fraction <= 1.0:  # also rejects nan
        return None
    return parts[1], fraction


def _kill_group(process: subprocess.Popen[str]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def run_child(
    payload: BenchSpec, *, timeout_s: float, progress: ProgressCallback | None = None
) -> BenchResult:
    """Run the worker on ``payload``; return its result, or a failure the parent observed."""
    with termination_raises(), scratch_folder("perdollar-bench-") as scratch:
        spec_path, result_path = Path(scratch, "spec.json"), Path(scratch, "result.json")
        spec_path.write_text(json.dumps(payload), encoding="utf-8")
        stderr_path = Path(scratch, "stderr.txt")
        with open(stderr_path, "w+", encoding="utf-8", errors="replace") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "perdollar.measure.worker", str(spec_path), str(result_path)],
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                errors="replace",
                start_new_session=True,  # its own process group: a timeout kills DDP ranks too
                preexec_fn=child_preexec(),  # and it dies with us, even when we are SIGKILLed
            )
            watcher = _ChildWatcher(process.stdout, progress)
            try:
                process.wait(timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                _kill_group(process)
                timed_out = True
            except BaseException:
                # Its own session does not get the terminal's Ctrl-C: take it down with us.
                _kill_group(process)
                raise
            watcher.thread.join(timeout=2)
            stderr.seek(0)
            stderr_tail = stderr.read()[-3000:]
        if result_path.exists():
            return _read_result(result_path)
    if timed_out:
        return _timed_out(timeout_s)
    return _observed_failure(process.returncode, stderr_tail, list(watcher.tail))


def run_forked(workload: Workload, payload: BenchSpec, *, timeout_s: float) -> BenchResult:
    """Like :func:`run_child` for a Workload that exists only in this process's memory.

    Forking is the only way to hand such an object to a child. CUDA does not survive a fork,
    so a parent that has already touched the GPU must pass a spec string instead.
    """
    import multiprocessing

    import torch

    from perdollar.measure.worker import forked_main

    if torch.cuda.is_initialized():
        raise PerdollarError(
            f"workload {workload.name!r} is an in-memory object and CUDA is already initialised here",
            "pass it as 'path/file.py:function' so a fresh process can load it",
        )
    with termination_raises(), scratch_folder("perdollar-bench-") as scratch:
        result_path = Path(scratch, "result.json")
        process = multiprocessing.get_context("fork").Process(
            target=forked_main,
            args=({**payload, "parent_pid": os.getpid()}, str(result_path), workload),
            daemon=False,
        )
        process.start()
        try:
            process.join(timeout_s)
        finally:
            timed_out = process.is_alive()
            if timed_out:
                process.kill()
                process.join()
        if result_path.exists():
            return _read_result(result_path)
    if timed_out:
        return _timed_out(timeout_s)
    return _observed_failure(process.exitcode or 0, "", [])


def _observed_failure(returncode: int, stderr_tail: str, stdout_tail: list[str]) -> BenchResult:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        if -returncode == signal.SIGKILL:
            return {
                "status": "oom",
                "message": f"killed by {name}, most likely by the kernel's out-of-memory killer",
            }
        return {
            "status": "killed",
            "message": f"the benchmark process died of {name}",
            "traceback": stderr_tail,
        }
    last = next((line for line in reversed(stderr_tail.strip().splitlines()) if line.strip()), "")
    message = f"the benchmark process exited with code {returncode}" + (f": {last}" if last else "")
    return {
        "status": classify_failure(stderr_tail),
        "message": message[:800],
        "traceback": stderr_tail,
        "stdout_tail": stdout_tail,
    }


def _read_result(result_path: Path) -> BenchResult:
    # The worker wrote it (measure_prepared, failure_payload); JSON has no record of its type.
    result: BenchResult = json.loads(result_path.read_text(encoding="utf-8"))
    return result


def _timed_out(timeout_s: float) -> BenchResult:
    return {
        "status": "timeout",
        "message": f"no result within the {timeout_s:.0f} s timeout (the workload hung or is too slow)",
    }
