"""The local executor: a job's setup and run scripts as real subprocesses on this host.

It exercises exactly the path a cloud job takes (scripts → benchmark → framed JSON in the log →
measurement), but what it measures is this host: every result carries ``executor: local``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from perdollar.files import write_file_safely
from perdollar.launch.outcome import JobOutcome, outcome_from_log
from perdollar.launch.spec import STORE_SECRET, BenchmarkJob

# Beyond the run script's own `timeout`, the grace the subprocess gets before it is killed.
_KILL_GRACE_S = 45.0


def _perdollar_wrapper(folder: Path) -> Path:
    """A `perdollar` command bound to this interpreter, so jobs run the same installation."""
    wrapper = folder / "perdollar"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"exec {sys.executable!s} -c "
        "'import sys; from perdollar.cli import main; main(sys.argv[1:])' \"$@\"\n"
    )
    wrapper.chmod(0o755)
    return wrapper


def _job_script(folder: Path, job: BenchmarkJob) -> str:
    """Setup, then run, each in a bash of its own as SkyPilot runs them: the setup's ``set -e``
    must not reach the run script, whose failing benchmark still has to print its framed result
    and exit with its own status."""
    setup, run = folder / "setup.sh", folder / "run.sh"
    setup.write_text(job.setup)
    run.write_text(job.run)
    return (
        f"bash {shlex.quote(str(setup))} || "
        '{ status=$?; echo "setup failed (exit $status)"; exit $status; }\n'
        f"exec bash {shlex.quote(str(run))}\n"
    )


class LocalExecutor:
    name = "local"
    billed = False  # this machine: the jobs' caps are what they would cost on the cloud, not a charge

    def __init__(self, log_dir: Path | None = None) -> None:
        self.log_dir = log_dir

    def run(self, job: BenchmarkJob, on_line: Callable[[str], None] | None = None) -> JobOutcome:
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="perdollar-job-") as scratch:
            scratch_path = Path(scratch)
            env = {
                **os.environ,
                **job.envs,
                "PERDOLLAR_BIN": str(_perdollar_wrapper(scratch_path)),
                "PERDOLLAR_SKIP_INSTALL": "1",  # this environment already runs perdollar
                "SKYPILOT_NODE_RANK": "0",
                "SKYPILOT_NUM_NODES": "1",
                "SKYPILOT_NODE_IPS": "127.0.0.1",
            }
            if job.store_url:  # a secret on a cluster; here, this process's environment
                env[STORE_SECRET] = job.store_url
            cwd = job.workdir or scratch
            script = _job_script(scratch_path, job)
            log_text, returncode = self._run_script(
                script, env, cwd, job.caps.max_seconds + _KILL_GRACE_S, on_line
            )
        log_path = None
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_file = self.log_dir / f"{job.name}.log"
            write_file_safely(log_file, log_text, overwrite=True)
            log_path = str(log_file)
        if returncode is None:
            log_text += f"\n(killed by the local executor after {job.caps.max_seconds + _KILL_GRACE_S:.0f} s)"
            returncode = 124
        return outcome_from_log(
            job,
            self.name,
            log_text,
            returncode=returncode,
            wall_seconds=time.monotonic() - started,
            log_path=log_path,
        )

    @staticmethod
    def _run_script(
        script: str, env: dict[str, str], cwd: str, timeout_s: float, on_line: Callable[[str], None] | None
    ) -> tuple[str, int | None]:
        # A process group of its own, so a hung benchmark and its children die together.
        process = subprocess.Popen(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        lines: list[str] = []
        killed: list[bool] = []

        def kill() -> None:
            killed.append(True)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

        watchdog = threading.Timer(timeout_s, kill)
        watchdog.start()
        assert process.stdout is not None
        try:
            for line in process.stdout:
                lines.append(line)
                if on_line is not None:
                    on_line(line.rstrip("\n"))
            returncode = process.wait()
        finally:
            watchdog.cancel()
        return "".join(lines), None if killed else returncode
