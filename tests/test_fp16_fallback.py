"""A chip without bf16 runs a mixed-precision bf16 step in fp16 with loss scaling, at its fp16 rate,
and the answer says so; pure bf16 training, which has no fp16 stand-in, stays refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.frame import prediction_frame
from perdollar.predict.llm.frame import llm_prediction_frame
from perdollar.profile.profiler import profile_workload
from perdollar.workload import load_workload
from perdollar.workload.llm import load_llm_workload

REMARK = "fp16 with loss scaling: no bf16 on T4"


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


def test_a_vision_step_on_a_t4_runs_in_fp16_at_the_fp16_rate(cat) -> None:
    profile = profile_workload(load_workload("vit-b16"))
    assert profile.precision == "amp-bf16"
    t4, a10g = cat.instance("g4dn.xlarge"), cat.instance("g5.xlarge")
    frame = prediction_frame(profile, [t4, a10g], dict(cat.accelerators))
    on_t4, on_a10g = frame.iloc[0], frame.iloc[1]
    assert on_t4["excluded_reason"] == "" and on_t4["precision_remark"] == REMARK
    assert on_a10g["precision_remark"] == ""
    # At the T4's fp16 tensor rate (65 TFLOPS), not its fp32 rate (8.1): the same step in fp16 runs
    # at the rate the bf16 step is predicted at.
    fp16 = prediction_frame(profile_workload(load_workload("vit-b16", precision="amp-fp16")), [t4],
                            dict(cat.accelerators)).iloc[0]  # fmt: skip
    assert on_t4["samples_per_second"] == pytest.approx(fp16["samples_per_second"], rel=0.02)


def test_pure_bf16_on_a_t4_stays_refused_with_the_reason(cat) -> None:
    profile = profile_workload(load_workload("vit-b16", precision="bf16"))
    row = prediction_frame(profile, [cat.instance("g4dn.xlarge")], dict(cat.accelerators)).iloc[0]
    assert row["excluded_reason"].startswith("bf16 not supported by this accelerator")
    assert "--precision amp-bf16" in row["excluded_reason"]


def test_language_model_lora_on_a_t4_runs_in_fp16(cat) -> None:
    workload = load_llm_workload("llama-3.2-1b", finetune="lora", seq_len=1024, global_batch=8)
    only = replace(
        cat, instance_types={k: v for k, v in cat.instance_types.items() if v.name == "g4dn.xlarge"}
    )
    row = llm_prediction_frame(workload, only, (1,), keep=False).iloc[0]
    assert row["excluded_reason"] == "" and bool(row["fits"])
    assert row["precision_remark"] == REMARK
    # MFU against the T4's fp16 peak, so a plausible share rather than eight times too much.
    assert 0.05 < row["mfu"] < 0.6


def test_predict_names_the_fallback_and_refuses_pure_bf16() -> None:
    args = ("predict", "llama-3.2-1b", "--instance", "g4dn.xlarge", "--finetune", "lora",
            "--seq-len", "1024", "--global-batch", "8")  # fmt: skip
    ran = run_perdollar(*args)
    assert ran.returncode == 0, ran.stderr
    assert f"precision: {REMARK}" in ran.stdout
    refused = run_perdollar(*args, "--precision", "bf16")
    assert refused.returncode == 2
    assert "pure bf16 training" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
