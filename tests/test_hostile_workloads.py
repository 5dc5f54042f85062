"""A workload that exits, raises, segfaults, hangs or exhausts memory is a result, never perdollar's end.

Every command that runs the user's code (profile, predict, bench in every mode, check, serve-bench)
is driven with workload files that misbehave at import, in the training step or in the forward
pass. perdollar must exit 1 with one line naming the status (error, oom, timeout, killed) and,
where the traceback shows it, the workload's file and line; it never exits with the workload's own
code and never prints a traceback. bench keeps the failure in the store.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from cli_runner import run_perdollar, run_perdollar_process
from hostile_files import write_hostile

slow = pytest.mark.slow  # the rest of the hostile set: run with --slow (CI does)


def _one_line_failure(done: subprocess.CompletedProcess[str], status: str) -> str:
    """The error line, after checking the exit code, the status named and the absence of a traceback."""
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("perdollar: error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert f"failed ({status})" in errors[0], errors[0]
    return errors[0]


PROFILE_CASES = [
    # where, act, status, what the line must also say (None: the file and line)
    ("import", "exit", "error", "exited with code 3"),
    ("import", "sysexit", "error", None),
    ("import", "raise", "error", None),
    ("step", "raise", "error", None),
    ("step", "segv", "killed", "SIGSEGV"),
    ("step", "exit", "error", "exited with code 3"),
    ("step", "hog", "oom", "MemoryError"),
]


@pytest.mark.parametrize(("where", "act", "status", "says"), PROFILE_CASES,
                         ids=[f"{w}-{a}" for w, a, _, _ in PROFILE_CASES])  # fmt: skip
def test_profile_survives_a_hostile_workload(
    where: str, act: str, status: str, says: str | None, tmp_path: Path
) -> None:
    spec, location = write_hostile(tmp_path, where, act)
    line = _one_line_failure(run_perdollar("profile", spec, store=tmp_path / "s.db", columns=400), status)
    assert (says or location) in line, line


def test_a_workload_that_hangs_at_import_times_out(tmp_path: Path) -> None:
    spec, _ = write_hostile(tmp_path, "import", "sleep")
    done = run_perdollar("profile", spec, "--timeout", "5", store=tmp_path / "s.db", columns=400, timeout=120)
    line = _one_line_failure(done, "timeout")
    assert "5 s" in line


def test_predict_traces_in_a_child_and_never_takes_the_workloads_exit_code(tmp_path: Path) -> None:
    spec, _ = write_hostile(tmp_path, "step", "exit")
    done = run_perdollar("predict", spec, "--instance", "g5.xlarge", store=tmp_path / "s.db", columns=400)
    assert "exited with code 3" in _one_line_failure(done, "error")


def _stored_statuses(store: Path) -> list[str]:
    done = run_perdollar("history", "--json", store=store, columns=400)
    assert done.returncode == 0, done.stderr
    return [entry["details"]["status"] for entry in json.loads(done.stdout)["entries"]]


BENCH_CASES = [
    ("import", "exit", "error", "exited with code 3"),
    ("step", "raise", "error", "hostile failure"),
    ("step", "segv", "killed", "SIGSEGV"),
    ("step", "hog", "oom", "MemoryError"),
]


@pytest.mark.parametrize(("where", "act", "status", "says"), BENCH_CASES,
                         ids=[f"{w}-{a}" for w, a, _, _ in BENCH_CASES])  # fmt: skip
def test_bench_stores_a_hostile_workload_as_a_failed_result(
    where: str, act: str, status: str, says: str, tmp_path: Path
) -> None:
    spec, location = write_hostile(tmp_path, where, act)
    store = tmp_path / "s.db"
    done = run_perdollar("bench", spec, "--duration", "1", store=store, columns=400)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr
    assert f"status {status}" in done.stdout and says in done.stdout, done.stdout
    if act == "raise":
        assert location in done.stdout
    assert _stored_statuses(store) == [status]


def test_bench_timeout_covers_the_import(tmp_path: Path) -> None:
    spec, _ = write_hostile(tmp_path, "import", "sleep")
    store = tmp_path / "s.db"
    done = run_perdollar(
        "bench", spec, "--duration", "1", "--timeout", "6", store=store, columns=400, timeout=120
    )
    assert done.returncode == 1 and "status timeout" in done.stdout, done.stdout + done.stderr[-1500:]
    assert _stored_statuses(store) == ["timeout"]


@slow
def test_bench_with_two_processes_names_the_rank_and_the_line(tmp_path: Path) -> None:
    spec, location = write_hostile(tmp_path, "step", "raise")
    done = run_perdollar(
        "bench", spec, "--duration", "1", "--nproc", "2", store=tmp_path / "s.db", columns=400
    )
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert "rank 0: RuntimeError: hostile failure" in done.stdout and location in done.stdout, done.stdout


@slow
def test_bench_inference_of_a_segfaulting_forward_is_killed(tmp_path: Path) -> None:
    spec, _ = write_hostile(tmp_path, "forward", "segv")
    done = run_perdollar(
        "bench", spec, "--inference", "--duration", "1", store=tmp_path / "s.db", columns=400
    )
    assert done.returncode == 1 and "Traceback" not in done.stdout + done.stderr
    assert "killed" in done.stdout and "SIGSEGV" in done.stdout, done.stdout


@slow
def test_check_of_a_raising_step_fails_and_says_why(tmp_path: Path) -> None:
    spec, location = write_hostile(tmp_path, "step", "raise")
    done = run_perdollar(
        "check", spec, "--duration", "1", "--nproc", "1", store=tmp_path / "s.db", columns=400
    )
    assert done.returncode == 1, done.stdout + done.stderr[-1500:]
    assert "Traceback" not in done.stdout + done.stderr
    assert "the cached-input run (×1) ended error" in done.stderr and location in done.stderr


@slow
def test_serve_bench_of_a_segfaulting_forward_is_killed(tmp_path: Path) -> None:
    spec, _ = write_hostile(tmp_path, "forward", "segv")
    done = run_perdollar(
        "serve-bench", spec, "--rates", "5", "--step-seconds", "1", store=tmp_path / "s.db", columns=400
    )
    assert "SIGSEGV" in _one_line_failure(done, "killed")


def test_a_well_behaved_file_still_profiles_and_benches(tmp_path: Path) -> None:
    """The same template with nothing hostile switched on: the isolation costs nothing in results."""
    spec, _ = write_hostile(tmp_path, "never", "raise")
    profiled = run_perdollar("profile", spec, "--json", store=tmp_path / "s.db", columns=400)
    assert profiled.returncode == 0, profiled.stderr[-2000:]
    assert json.loads(profiled.stdout)["params"] == 8 * 8 + 8
    benched = run_perdollar("bench", spec, "--duration", "1", "--json", store=tmp_path / "s.db", columns=400)
    assert benched.returncode == 0, benched.stderr[-2000:]
    assert json.loads(benched.stdout)["status"] == "ok"


def test_a_forged_reply_cannot_run_code_in_perdollars_process(tmp_path: Path) -> None:
    """The child could overwrite its reply with a pickle that calls os._exit when read: it is refused."""
    forger = tmp_path / "forger.py"
    forger.write_text(
        "import os, pickle, sys\n"
        "class Boom:\n"
        "    def __reduce__(self):\n"
        "        return (os._exit, (9,))\n"
        "def build():\n"
        "    open(sys.argv[2], 'wb').write(pickle.dumps({'value': Boom()}))\n"
        "    os._exit(0)\n"
    )
    # A fresh interpreter: were the reply unpickled, os._exit(9) would end pytest's own process.
    done = run_perdollar_process("profile", f"{forger}:build", store=tmp_path / "s.db", columns=400)
    line = _one_line_failure(done, "error")
    assert "reply could not be read" in line and "_exit" in line
