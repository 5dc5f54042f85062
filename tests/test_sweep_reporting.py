"""What a sweep says it did: what it cost (nothing, on this machine), what its measurements changed,
and the numbering of its jobs and task files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer

from cli_runner import run_perdollar
from perdollar.cli.sweep_render import print_event
from perdollar.launch.jobs import JobOptions
from perdollar.launch.plan import SweepContext, plan_first_jobs, write_dry_run
from perdollar.launch.sweep import SweepSettings, describe_changes, hardware_key, run_sweep
from perdollar.question import Question
from perdollar.select.model import Recommendation
from perdollar.workload import load_workload
from test_launch_jobs import make_estimate
from test_sweep_strategy import ReplayExecutor, _make_job


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


class _ThisMachine(ReplayExecutor):
    """Replays known rates, as a run on this machine would: nothing is charged."""

    name = "local"
    billed = False


def test_a_sweep_on_this_machine_is_charged_nothing_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    ranked = [make_estimate("g6.xlarge", 1000, 0.805), make_estimate("g5.xlarge", 900, 1.006)]
    events: list[tuple[str, object]] = []
    result = run_sweep(
        ranked, _make_job, _ThisMachine({"g6.xlarge": 990.0, "g5.xlarge": 880.0}),
        SweepSettings(strategy="top-k", max_runs=2, parallel=1),
        on_event=lambda kind, payload: events.append((kind, payload)),
    )  # fmt: skip
    assert result.billed is False and result.charged_cap_usd == 0 and result.spent_cap_usd > 0
    for kind, payload in events:
        print_event(kind, payload, billed=result.billed)
    said = capsys.readouterr().err
    assert "1 of 2 jobs, local, not billed" in said and "2 of 2 jobs, local, not billed" in said
    assert "$" not in said


@pytest.mark.slow
def test_a_local_sweep_says_nothing_was_billed_and_that_it_moved_no_prediction(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    done = run_perdollar(
        "sweep", "mlp", "--via", "local", "--only", "g5.xlarge", "--cloud", "aws", "--max-nodes", "1",
        "--top", "1", "--duration", "1", "--out", str(out), "--json",
        env={"PERDOLLAR_HOME": str(tmp_path / "home")},
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


def _options(command: str) -> dict[str, object]:
    from perdollar.cli import build_app

    group = typer.main.get_command(build_app(command))
    return {
        flag: parameter
        for parameter in group.commands[command].params  # type: ignore[attr-defined]
        for flag in parameter.opts
        if flag.startswith("--")
    }


QUESTION_OPTIONS = (
    "--samples", "--epochs", "--dataset-size", "--deadline", "--tokens", "--max-nodes", "--batch-size",
    "--precision", "--seq-len", "--micro-batch", "--global-batch", "--plan", "--checkpoint-seconds",
    "--interruption-rate", "--data-region", "--market", "--cloud", "--region",
)  # fmt: skip


def test_sweep_takes_the_questions_options_as_recommend_declares_them() -> None:
    recommend, sweep = _options("recommend"), _options("sweep")
    for flag in QUESTION_OPTIONS:
        assert flag in sweep, f"sweep does not take {flag}"
        ours, theirs = sweep[flag], recommend[flag]
        assert (ours.default, ours.help) == (theirs.default, theirs.help), flag  # type: ignore[attr-defined]


def test_a_language_model_sweep_plans_the_candidates_recommend_ranks_for_its_tokens(tmp_path: Path) -> None:
    question = ("llama-3.1-8b", "--tokens", "2e10", "--cloud", "aws", "--no-store")
    ranked = json.loads(run_perdollar("recommend", *question, "--json").stdout)["estimates"]
    done = run_perdollar(
        "sweep", *question, "--via", "skypilot", "--dry-run", "--strategy", "top-k", "--top", "2",
        "--out", str(tmp_path / "plan"), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    jobs = json.loads(done.stdout)["jobs"]
    first = {(e["instance_type"], e["nodes"]) for e in ranked if e["feasible"]}
    planned = {(job["resources"]["instance_type"], job["resources"]["num_nodes"]) for job in jobs}
    assert len(jobs) == 2 and planned <= first
    assert all("--plan" in job["run"] for job in jobs)  # each measured under its candidate's plan


def test_only_finds_a_machine_the_default_ranking_leaves_out() -> None:
    from perdollar.ask.questions import decided
    from perdollar.ask.sweep import prepare_sweep
    from perdollar.configuration import parse_configuration

    question = decided(Question(workload_name="mlp", clouds=("aws",)))
    _, everything = prepare_sweep(question, use_store=False)
    assert "p5.48xlarge" not in {e.instance_type for e in everything.estimates}  # far down for a small MLP
    _, named = prepare_sweep(question, use_store=False, only=[parse_configuration("p5.48xlarge")])
    assert named.estimates and {e.instance_type for e in named.estimates} == {"p5.48xlarge"}
    assert named.question == question  # stored as asked: the widening is the sweep's own
