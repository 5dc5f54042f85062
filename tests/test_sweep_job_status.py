"""A local sweep keeps each job's own status: a workload that fails in its job is a failed
workload with its error (not "crashed: no output"), and a sweep whose every job failed exits 1."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.local import LocalExecutor
from test_launch_jobs import make_estimate

pytestmark = pytest.mark.slow

# Fails only inside a sweep's job (the executor sets PERDOLLAR_CANDIDATE), so that the
# recommendation before the sweep can still profile it.
WORKLOAD = textwrap.dedent("""
    import os

    import torch
    from perdollar.workload import Workload


    class FailsInJobs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(8, 2)

        def forward(self, x):
            if os.environ.get("PERDOLLAR_CANDIDATE"):
                raise ValueError("this model fails on purpose")
            return self.layer(x)


    def _inputs(batch_size, device):
        return (torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device))


    def workload():
        return Workload(name="fails-in-jobs", model_factory=FailsInJobs, input_factory=_inputs, batch_size=4)
""")


@pytest.fixture
def failing(tmp_path: Path) -> str:
    path = tmp_path / "fails.py"
    path.write_text(WORKLOAD, encoding="utf-8")
    return f"{path}:workload"


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", "off")


def test_a_failing_workload_keeps_its_status_and_error(failing: str) -> None:
    job = job_for_estimate(
        make_estimate("g5.xlarge", 900, 1.006), 0, JobOptions(workload=failing, duration_s=2)
    )
    outcome = LocalExecutor().run(job)
    assert outcome.status == "workload-failed", outcome.reason
    assert "fails on purpose" in outcome.reason
    assert outcome.measurement is not None and outcome.measurement.status == "error"


def test_a_failing_setup_still_stops_the_job(failing: str) -> None:
    job = job_for_estimate(
        make_estimate("g5.xlarge", 900, 1.006), 0, JobOptions(workload=failing, duration_s=2)
    )
    broken = dataclasses.replace(job, setup="set -e\nfalse\necho setup-went-on\n", run="echo run-started\n")
    outcome = LocalExecutor().run(broken)
    assert outcome.status == "crashed" and "exit status 1" in outcome.reason
    assert "setup-went-on" not in outcome.log_tail and "run-started" not in outcome.log_tail


def test_a_sweep_whose_every_job_failed_exits_1(failing: str, tmp_path: Path) -> None:
    done = run_perdollar(
        "sweep", failing, "--via", "local", "--top", "2", "--duration", "2", "--strategy", "top-k",
        "--out", str(tmp_path / "sweep"), "--json", "--no-store",
        env={"PERDOLLAR_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    outcomes = json.loads(done.stdout)["outcomes"]
    assert outcomes and all(o["status"] == "workload-failed" for o in outcomes)
