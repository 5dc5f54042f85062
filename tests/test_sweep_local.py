"""A sweep through the local executor: real benchmark subprocesses, a real SQLite store.

What the local executor measures is this host; the tests check that every stored result says so.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.local import LocalExecutor
from perdollar.launch.plan import SweepContext, recorder
from perdollar.launch.sweep import SweepSettings, run_sweep
from perdollar.store import open_store
from perdollar.workload import load_workload
from test_launch_jobs import make_estimate

pytestmark = pytest.mark.slow


def test_one_failing_candidate_does_not_stop_the_sweep(tmp_path: Path) -> None:
    workload = load_workload("mlp")
    ranked = [
        make_estimate("g5.xlarge", 900, 1.006),
        make_estimate("g4dn.xlarge", 700, 0.526),
        make_estimate("g6.xlarge", 800, 0.805),
        make_estimate("g5.2xlarge", 950, 1.212),  # beyond --top 3: never launched
    ]
    options = JobOptions(workload="mlp", duration_s=2)

    def make_job(estimate, index):  # the second candidate's job is broken on purpose
        job = job_for_estimate(estimate, index, options)
        if estimate.instance_type == "g4dn.xlarge":
            return dataclasses.replace(job, run=job.run.replace("bench mlp", "bench no-such-workload"))
        return job

    store_url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    saved: dict[str, str | None] = {}
    context = SweepContext("mlp", workload, None)
    events: list[str] = []
    result = run_sweep(
        ranked,
        make_job,
        LocalExecutor(tmp_path / "logs"),
        SweepSettings(strategy="top-k", max_runs=3, parallel=2),
        record=recorder(context, store_url=store_url, enabled=True, saved=saved),
        on_event=lambda kind, payload: events.append(kind),
    )
    by_type = {o.job.resources.instance_type: o for o in result.outcomes}
    assert set(by_type) == {"g4dn.xlarge", "g6.xlarge", "g5.xlarge"}  # the top 3 predicted samples/$
    assert by_type["g4dn.xlarge"].status == "crashed"
    assert "no-such-workload" in by_type["g4dn.xlarge"].log_tail
    ok = [o for o in result.outcomes if o.ok]
    assert len(ok) == 2
    for outcome in ok:
        measurement = outcome.measurement
        assert measurement.samples_per_second.median > 0
        assert measurement.extra["executor"] == "local"
        assert "this host" in measurement.extra["measured_on"]
        assert measurement.host.instance_type != outcome.job.resources.instance_type
        assert Path(outcome.log_path).exists()
    assert result.stopped_because == "reached 3 benchmark runs"
    assert result.spent_cap_usd == pytest.approx(sum(o.job.caps.max_dollars for o in result.outcomes))
    # Every outcome is stored: two measurements and the failure with its reason.
    assert all(saved.values()) and len(saved) == 3
    with open_store(store_url) as store:
        stored = store.measurements_for(workload.fingerprint, ok_only=False)
    assert sorted(m.status for m in stored) == ["error", "ok", "ok"]
    failure = next(m for m in stored if m.status == "error")
    assert (
        failure.message.startswith("crashed")
        and failure.extra["candidate"] == by_type["g4dn.xlarge"].job.candidate
    )
    assert events.count("outcome") == 3


def test_a_hanging_job_is_killed_at_its_cap(tmp_path: Path) -> None:
    options = JobOptions(workload="mlp", duration_s=2)
    job = job_for_estimate(make_estimate("g5.xlarge", 900, 1.006), 0, options)
    hung = dataclasses.replace(job, run="sleep 600\n", caps=dataclasses.replace(job.caps, max_seconds=1))
    executor = LocalExecutor()
    executor_grace = 2.0
    import perdollar.launch.local as local_module

    original = local_module._KILL_GRACE_S
    local_module._KILL_GRACE_S = executor_grace
    try:
        outcome = executor.run(hung)
    finally:
        local_module._KILL_GRACE_S = original
    assert outcome.status == "timeout" and "cap" in outcome.reason
    assert outcome.wall_seconds < 60


def test_cli_sweep_via_local_runs_stores_and_reranks(tmp_path: Path) -> None:
    home = tmp_path / "home"
    out = tmp_path / "sweep"
    done = run_perdollar(
        "sweep",
        "mlp",
        "--via",
        "local",
        "--top",
        "3",
        "--duration",
        "2",
        "--parallel",
        "2",
        "--strategy",
        "top-k",
        "--out",
        str(out),
        "--json",
        env={"PERDOLLAR_HOME": str(home)},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert len(document["outcomes"]) == 3
    assert all(o["status"] == "ok" and o["measurement_id"] for o in document["outcomes"])
    assert all(o["executor"] == "local" for o in document["outcomes"])
    # Progress after every job: how many of how many, and that this machine charges nothing.
    progress = [line for line in done.stderr.splitlines() if " jobs, local, not billed" in line]
    assert [line.split(" jobs,")[0] for line in progress] == ["1 of 3", "2 of 3", "3 of 3"]
    assert document["after_top"] and document["recommendation_id"]
    assert document["changes"], "the re-ranking says what changed"
    assert json.loads((out / "sweep.json").read_text())["recommendation_id"] == document["recommendation_id"]
    history = run_perdollar("history", "--json", env={"PERDOLLAR_HOME": str(home)}, timeout=600)
    assert history.returncode == 0, history.stderr[-2000:]
    listed = json.dumps(json.loads(history.stdout))
    for outcome in document["outcomes"]:
        assert outcome["measurement_id"] in listed
