"""Memory that errs on the side of running: a plan inside the estimate's own reserve is tight (ranked,
its margin said), only a clear overrun is refused; Unsloth keeps its checkpoints in host memory."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.frame import prediction_frame
from perdollar.predict.llm import TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm.memory import GIB, MemoryPerGPU
from perdollar.predict.llm.planner import search_plans
from perdollar.price.frame import Target
from perdollar.profile.profiler import profile_workload
from perdollar.select.estimates import estimates_from_frame
from perdollar.workload import load_workload
from perdollar.workload.llm import load_llm_workload


@pytest.fixture(scope="module")
def cat():
    return catalog.load()


def _memory(total_gib: float, device_gib: float = 48.0) -> MemoryPerGPU:
    """A step holding ``total_gib`` on a device of ``device_gib`` (10% reserve, 5% left at the tightest)."""
    return MemoryPerGPU(
        weights=total_gib * GIB, gradients=0.0, optimizer_states=0.0, activations=0.0, buffers=0.0,
        capacity=0.9 * device_gib * GIB, fixed=total_gib * GIB, per_sequence=0.0,
        limit=0.95 * device_gib * GIB,
    )  # fmt: skip


def test_inside_the_reserve_is_tight_and_says_by_how_much() -> None:
    tight = _memory(43.4)  # 0.2 GiB over 43.2 usable of 48
    assert tight.fits and tight.tight
    assert tight.remark() == "tight: 0.2 GiB over the estimate's margin (43.4 of 48.0 GiB held)"
    roomy = _memory(42.8)
    assert roomy.fits and not roomy.tight
    assert roomy.remark() == "fits with 0.4 GiB to spare"
    overrun = _memory(45.7)  # past 95% of the device
    assert not overrun.fits and not overrun.tight


def test_unsloth_70b_qlora_runs_on_one_48_gb_gpu(cat) -> None:
    # Unsloth documents Llama 3.x 70B QLoRA fine-tuning on one 48 GB GPU (Unsloth Requirements
    # page: 41 GB minimum; the Llama 3.3 release post: "under 48GB of VRAM").
    arch = load_llm_workload("llama-3.1-70b").architecture
    l40s = cat.accelerators["L40S"]
    plan = parse_plan("ddp+ac,qlora16,unsloth")
    p = predict_llm_training(arch, l40s, gpus_per_node=1, nodes=1, plan=plan, seq_len=2048, global_batch=8)
    assert p.fits, p.fit_reason
    # The checkpointed layer inputs (80 × 2048 × 8192 × 2 bytes) wait in host memory.
    assert p.memory_gib["activations"] < 80 * 2048 * 8192 * 2 / GIB


def test_the_planner_takes_a_tight_plan_only_where_none_has_room(cat) -> None:
    arch = load_llm_workload("gpt-125m").architecture
    a100 = cat.accelerators["A100-SXM4-40GB"]
    common = {"gpus_per_node": 1, "nodes": 1, "seq_len": 1024, "global_batch": 8}
    needed = predict_llm_training(arch, a100, plan=TrainingPlan("ddp"), **common).memory_per_gpu_gib
    # A device on which the plain plan holds 93% of the memory: tight, but it runs.
    squeezed = dataclasses.replace(a100, memory_gib=needed / 0.93)
    found = search_plans(arch, squeezed, micro_batch=1, shapes=[TrainingPlan("ddp")], **common)
    assert found.best is not None and found.best.memory_tight
    assert found.best.fit_reason.startswith("tight: ")
    # Given a roomy alternative (checkpointing), the planner takes it instead.
    shapes = [TrainingPlan("ddp"), TrainingPlan("ddp", activation_checkpointing=True)]
    found = search_plans(arch, squeezed, micro_batch=1, shapes=shapes, **common)
    assert found.best is not None and not found.best.memory_tight
    assert found.best.plan.activation_checkpointing


def _holding(profile, total: float):
    """``profile`` with its step's peak made ``total`` bytes (by its workspace)."""
    rest = profile.memory.total - profile.memory.workspace
    return dataclasses.replace(profile, memory=dataclasses.replace(profile.memory, workspace=total - rest))


def test_a_tight_vision_row_is_ranked_with_its_remark(cat) -> None:
    profile = profile_workload(load_workload("resnet50"))
    instance = cat.instance("g5.xlarge")  # one A10G
    device = cat.accelerators[instance.accelerator_key].memory_gib * 2**30
    row = prediction_frame(_holding(profile, 0.93 * device), [instance], dict(cat.accelerators)).iloc[0]
    assert bool(row["fits"])
    assert row["fit_reason"].startswith("tight: ") and "over the estimate's margin" in row["fit_reason"]
    overrun = prediction_frame(_holding(profile, 0.97 * device), [instance], dict(cat.accelerators)).iloc[0]
    assert not bool(overrun["fits"]) and overrun["fit_reason"].startswith("needs ")


def test_a_ranked_row_carries_its_remarks_to_the_answer() -> None:
    from perdollar.report.tables import remarks_lines

    row = {
        "cloud": "aws", "instance_type": "g6e.xlarge", "region": "us-east-1", "market": "on-demand",
        "nodes": 1, "accelerator_key": "L40S", "accelerators_per_node": 1.0, "samples_per_second": 300.0,
        "samples_per_second_low": 200.0, "samples_per_second_high": 500.0, "basis": "spec",
        "bottleneck": "compute", "price_per_hour": 1.9, "samples_per_dollar": 5.7e5, "fits": True,
        "fit_reason": "tight: 0.2 GiB over the estimate's margin (43.4 of 48.0 GiB held)",
        "precision_remark": "",
    }  # fmt: skip
    estimate = estimates_from_frame(pd.DataFrame([row]), Target())[0]
    assert estimate.remarks == (row["fit_reason"],)
    assert remarks_lines([estimate]) == [f"#1 1x g6e.xlarge on-demand (aws us-east-1): {row['fit_reason']}"]
    # A remark several rows share is said once, after their ranks.
    shared = dataclasses.replace(estimate, remarks=("fp16 with loss scaling: no bf16 on T4",))
    assert remarks_lines([shared, estimate, shared]) == [
        "#1, #3: fp16 with loss scaling: no bf16 on T4",
        f"#2 1x g6e.xlarge on-demand (aws us-east-1): {row['fit_reason']}",
    ]


def test_predict_says_how_tight_or_how_much_room() -> None:
    args = ("predict", "llama-3.1-70b", "--instance", "g6e.xlarge", "--finetune", "qlora",
            "--seq-len", "2048", "--global-batch", "8", "--plan", "ddp+ac", "--micro-batch", "1")  # fmt: skip
    unsloth = run_perdollar(*args, "--framework", "unsloth")
    assert unsloth.returncode == 0, unsloth.stderr
    assert "GiB to spare" in unsloth.stdout and "does NOT fit" not in unsloth.stdout
