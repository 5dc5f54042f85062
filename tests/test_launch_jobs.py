"""Job specs, caps, result framing and the value-of-information strategy."""

from __future__ import annotations

import dataclasses
import math
import subprocess

import pytest

from perdollar.errors import PerdollarError
from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.outcome import extract_result, outcome_from_log
from perdollar.launch.spec import RESULT_BEGIN, RESULT_END, derive_caps
from perdollar.launch.strategy import (
    Belief,
    belief_from_band,
    chance_of_changing_top,
    expected_improvement,
    p_top_is_best,
    rank_picks,
    stop_reason,
    top_k_order,
    value_of_measuring,
)
from perdollar.price.model import Estimate


def make_estimate(
    instance_type: str,
    samples_per_second: float,
    price: float,
    *,
    band: float = 0.2,
    market: str = "on-demand",
    nodes: int = 1,
    accelerators: float = 1.0,
    cloud: str = "aws",
    region: str = "us-east-1",
    basis: str = "spec",
) -> Estimate:
    return Estimate(
        cloud=cloud,
        instance_type=instance_type,
        region=region,
        market=market,
        nodes=nodes,
        accelerator="A10G",
        accelerators_per_node=accelerators,
        samples_per_second=samples_per_second,
        samples_per_second_low=samples_per_second * (1 - band),
        samples_per_second_high=samples_per_second * (1 + band),
        basis=basis,
        bottleneck="compute",
        price_per_hour=price,  # type: ignore[arg-type]
        samples_per_dollar=samples_per_second * 3600 / price,
        time_to_target_hours=None,
        cost_to_target_usd=None,
        expected_time_hours=None,
        expected_cost_usd=None,
        p_meet_deadline=None,
        fits=True,
        excluded_reason="",
    )


def test_caps_follow_the_price_and_the_dollar_cap() -> None:
    caps = derive_caps(2.0, duration_s=60, overhead_seconds=600)
    # 60 s window + 180 s start-up allowance, billed with 600 s provisioning at $2/h.
    assert caps.max_seconds == 240
    assert caps.max_dollars == pytest.approx(2.0 * 840 / 3600)
    capped = derive_caps(36.0, duration_s=600, max_dollars=7.0, overhead_seconds=600)
    # $7 at $36/h buys 700 s, 600 of them provisioning: 100 s left to run.
    assert capped.max_seconds == 100
    assert capped.max_dollars <= 7.0
    with pytest.raises(PerdollarError):
        derive_caps(0.0, duration_s=60)


def test_job_for_a_spot_multi_node_candidate() -> None:
    estimate = make_estimate("g5.12xlarge", 400, 5.672, market="spot", nodes=2, accelerators=4)
    job = job_for_estimate(
        estimate,
        3,
        JobOptions(
            workload="vit-b16", duration_s=60, batch_size=128, wheel="/w/perdollar-0.1.0-py3-none-any.whl"
        ),
        accelerator_name="A10G",
    )
    assert job.resources.use_spot and job.resources.num_nodes == 2
    assert job.resources.accelerator == "A10G" and job.resources.accelerators_per_node == 4
    assert job.name.startswith("perdollar-03-") and len(job.name) <= 60
    assert "--nproc 4" in job.run and "--batch-size 128" in job.run and "--no-store" in job.run
    assert "MASTER_ADDR" in job.run and "SKYPILOT_NODE_IPS" in job.run
    assert f"timeout --kill-after=20 {int(job.caps.max_seconds)}" in job.run
    # perdollar is not on the package index: the node installs the wheel mounted beside it.
    assert 'pip install -q "$HOME/.perdollar/wheels/perdollar-0.1.0-py3-none-any.whl"' in job.setup
    assert job.file_mounts == {
        "~/.perdollar/wheels/perdollar-0.1.0-py3-none-any.whl": "/w/perdollar-0.1.0-py3-none-any.whl"
    }


def test_a_cap_too_small_to_measure_is_refused() -> None:
    estimate = make_estimate("p5.48xlarge", 3000, 98.32)
    with pytest.raises(PerdollarError, match="no time to measure"):
        job_for_estimate(estimate, 0, JobOptions(workload="mlp", max_dollars_per_run=5.0))


def test_the_run_script_frames_its_result_and_keeps_the_exit_status(tmp_path) -> None:
    estimate = make_estimate("g5.xlarge", 100, 1.0)
    job = job_for_estimate(estimate, 0, JobOptions(workload="mlp", duration_s=10))
    fake = tmp_path / "perdollar"
    fake.write_text('#!/bin/sh\necho \'{"status": "oom", "message": "does not fit"}\'\nexit 1\n')
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", "-c", job.run],
        env={"PATH": "/usr/bin:/bin", "PERDOLLAR_BIN": str(fake)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    data, exit_code = extract_result(done.stdout)
    assert data == {"status": "oom", "message": "does not fit"} and exit_code == 1


def test_a_log_without_result_is_a_crash_and_a_killed_job_a_timeout() -> None:
    job = job_for_estimate(make_estimate("g5.xlarge", 100, 1.0), 0, JobOptions(workload="mlp", duration_s=10))
    crash = outcome_from_log(
        job, "local", "Traceback ...\nRuntimeError: boom\n", returncode=1, wall_seconds=1
    )
    assert crash.status == "crashed" and "boom" in crash.reason
    killed = outcome_from_log(
        job, "local", f"{RESULT_BEGIN}\n\n{RESULT_END} exit=124\n", returncode=124, wall_seconds=1
    )
    assert killed.status == "timeout" and "cap" in killed.reason


def test_expected_improvement_matches_the_closed_form() -> None:
    # X ~ N(0, 1), threshold 0: E[max(X, 0)] = 1/sqrt(2π).
    assert expected_improvement(0.0, 1.0, 0.0) == pytest.approx(1 / math.sqrt(2 * math.pi))
    assert expected_improvement(2.0, 0.0, 1.0) == pytest.approx(1.0)
    assert expected_improvement(-5.0, 0.1, 0.0) == pytest.approx(0.0, abs=1e-12)


def test_voi_prefers_a_cheap_uncertain_challenger_over_a_hopeless_one() -> None:
    leader = belief_from_band("leader", 1000, 900, 1100, run_cost_usd=1.0)
    close = belief_from_band("close-cheap", 950, 600, 1500, run_cost_usd=0.5)
    hopeless = belief_from_band("far-behind", 300, 250, 360, run_cost_usd=0.1)
    beliefs = [leader, close, hopeless]
    assert value_of_measuring(beliefs, 2) < 1e-6
    assert value_of_measuring(beliefs, 1) > value_of_measuring(beliefs, 0) > 0
    picks = rank_picks(beliefs)
    assert picks[0].key == "close-cheap"
    assert 0.3 < chance_of_changing_top(beliefs, 1) < 0.6
    assert top_k_order(beliefs) == ["leader", "close-cheap", "far-behind"]


def test_stopping_rule() -> None:
    measured = Belief("a", math.log(1000), 0.02, 1.0, measured=True)
    far = belief_from_band("b", 500, 450, 550, run_cost_usd=1.0)
    assert p_top_is_best([measured, far]) == pytest.approx(1.0)
    assert "stable" in stop_reason(
        [measured, far], confidence=0.9, spent_usd=1, budget_usd=None, runs=1, max_runs=None
    )
    near = belief_from_band("c", 990, 700, 1400, run_cost_usd=1.0)
    assert (
        stop_reason([measured, near], confidence=0.9, spent_usd=1, budget_usd=None, runs=1, max_runs=None)
        == ""
    )
    assert "budget" in stop_reason(
        [measured, near], confidence=0.9, spent_usd=1, budget_usd=1.5, runs=1, max_runs=None
    )
    assert "3 benchmark runs" in stop_reason(
        [measured, near], confidence=0.9, spent_usd=0, budget_usd=None, runs=3, max_runs=3
    )


@pytest.mark.parametrize(
    ("plan", "bench"),
    [
        ("fsdp+ac,mb4,ga8", "fsdp+ac,mb4"),
        ("zero1,mb2,ga16", "zero2,mb2"),  # FSDP has no ZeRO-1: SHARD_GRAD_OP is the nearest
        ("fsdp,tp2,ga16", "fsdp"),  # tensor parallel is not run by bench: full-shard stands in
        ("ddp,qlora16,mb8,ga4", "fsdp,mb8"),
        ("", ""),
    ],
)
def test_a_language_model_candidate_is_benched_at_its_plan(plan: str, bench: str) -> None:
    estimate = dataclasses.replace(make_estimate("p5.48xlarge", 1e5, 98.0, accelerators=8.0), plan=plan)
    job = job_for_estimate(estimate, 0, JobOptions(workload="llama-3.1-8b"))
    if bench:
        assert f"--plan {bench} " in job.run and "--nproc 8" in job.run
    else:
        assert "--plan" not in job.run
