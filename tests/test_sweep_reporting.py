"""What a sweep says it did: what it cost (nothing, on this machine), what its measurements changed,
and the numbering of its jobs and task files."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run_perdollar
from perdollar.launch.jobs import JobOptions
from perdollar.launch.plan import SweepContext, plan_first_jobs, write_dry_run
from perdollar.launch.sweep import SweepSettings, describe_changes, hardware_key
from perdollar.question import Question
from perdollar.select.model import Recommendation
from perdollar.workload import load_workload
from test_launch_jobs import make_estimate


def test_a_measurement_of_another_machine_is_said_to_move_nothing() -> None:
    ranked = [make_estimate("g5.xlarge", 900, 1.006), make_estimate("g4dn.xlarge", 600, 0.526)]
    measured = {hardware_key(ranked[0])}
    lines = describe_changes(ranked, ranked, measured, {hardware_key(ranked[0]): "Test CPU, 2 cores"})
    assert lines[0].endswith("no measurement moved a prediction")
    assert lines[1] == (
        "g5.xlarge (aws): measured on Test CPU, 2 cores, not on a g5.xlarge, so its prediction stays spec "
        "(rank 1)"
    )


def test_a_measured_candidate_the_re_ranking_drops_is_said_to_have_dropped() -> None:
    before = [make_estimate("c7i.large", 300, 0.09), make_estimate("g4dn.xlarge", 600, 0.526)]
    after = before[1:]  # its measured rate put it below every candidate the answer keeps
    lines = describe_changes(before, after, {hardware_key(before[0])}, {hardware_key(before[0]): "here"})
    assert lines[0].startswith("top choice changed")
    assert lines[1] == "c7i.large (aws): rank 1 → no longer among the 1 candidates the re-ranked answer keeps"


def test_dry_run_task_files_are_numbered_in_the_order_they_launch(tmp_path: Path) -> None:
    pool = [
        make_estimate("g6.xlarge", 1000, 0.805),  # caps at about $0.19
        make_estimate("p3.2xlarge", 1500, 3.06),  # next by samples/$, but its $0.71 cap is over the budget
        make_estimate("g4dn.xlarge", 200, 0.526),  # about $0.12: launched second
    ]
    recommendation = Recommendation(
        question=Question(workload_name="mlp"), estimates=tuple(pool), pareto=(), explanation="",
        catalog_captured_at="", catalog_snapshot_id="", created_at="",
    )  # fmt: skip
    context = SweepContext("mlp", load_workload("mlp"), None)
    settings = SweepSettings(strategy="top-k", max_runs=3, budget_usd=0.4)
    chosen = plan_first_jobs(context, recommendation, JobOptions(workload="mlp", duration_s=60), settings)
    assert [job.resources.instance_type for job, _ in chosen] == ["g6.xlarge", "g4dn.xlarge"]
    files = [path.name for path in write_dry_run([job for job, _ in chosen], tmp_path)]
    assert [name[:13] for name in files] == ["perdollar-00-", "perdollar-01-"]


def test_a_local_sweep_says_nothing_was_billed_and_that_it_moved_no_prediction(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    done = run_perdollar(
        "sweep", "mlp", "--via", "local", "--only", "g5.xlarge", "--top", "1", "--duration", "1",
        "--out", str(out), "--json", env={"PERDOLLAR_HOME": str(tmp_path / "home")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)
    assert document["billed"] is False and document["spent_cap_usd"] == 0
    assert document["cloud_cost_cap_usd"] > 0  # what the same job caps at on the cloud
    progress = [line for line in done.stderr.splitlines() if " jobs, " in line]
    assert progress == ["1 of 1 jobs, local, not billed"]
    assert "$" not in "".join(line for line in done.stderr.splitlines() if line.startswith("→ launching"))
    # A CPU here is not the A10G of a g5.xlarge: its prediction cannot move, and the answer says so.
    assert document["changes"][0].endswith("no measurement moved a prediction")
    assert "not on a g5.xlarge, so its prediction stays" in document["changes"][1]
