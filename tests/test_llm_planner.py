"""Training plans: tokens parse back, and the planner finds what brute force over the same space finds."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.llm import TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm.planner import SIMPLER_PLAN_MARGIN, search_plans
from perdollar.predict.llm.step import plan_problem
from perdollar.workload.llm import load_llm_workload


@pytest.mark.parametrize(
    ("token", "plan"),
    [
        (
            "fsdp+ac,mb4,ga8",
            TrainingPlan("fsdp", activation_checkpointing=True, micro_batch=4, gradient_accumulation=8),
        ),
        ("hsdp,tp8,pp2", TrainingPlan("hsdp", tensor_parallel=8, pipeline_parallel=2)),
        (
            "ddp,qlora64,mb2,hf",
            TrainingPlan("ddp", finetune="qlora", lora_rank=64, micro_batch=2, framework="hf"),
        ),
        ("zero2+offload", TrainingPlan("zero2", cpu_offload=True)),
        (
            "fsdp+ac+backward-post,mb2",
            TrainingPlan("fsdp", activation_checkpointing=True, backward_prefetch="post", micro_batch=2),
        ),
        (
            "fsdp+sac,tp8-blocking,mb12",
            TrainingPlan(
                "fsdp",
                tensor_parallel=8,
                tensor_parallel_comm="blocking",
                selective_checkpointing=True,
                micro_batch=12,
            ),
        ),
        (
            "zero1+ac+blocking,tp8,mb8",
            TrainingPlan(
                "zero1",
                tensor_parallel=8,
                activation_checkpointing=True,
                data_parallel_comm="blocking",
                micro_batch=8,
            ),
        ),
    ],
)
def test_tokens_parse_back(token: str, plan: TrainingPlan) -> None:
    assert parse_plan(token) == plan
    assert plan.token() == token
    assert parse_plan(plan.token()) == plan


def test_text_names_everything() -> None:
    plan = TrainingPlan("fsdp", activation_checkpointing=True, micro_batch=4, gradient_accumulation=8)
    assert plan.text(16) == (
        "FSDP full-shard over 16 GPUs, activation checkpointing, micro-batch 4, accumulation 8,"
        " under Megatron-Core with Transformer Engine"
    )


def test_blocking_tensor_parallelism_and_backward_post_are_named_in_the_text() -> None:
    blocking = parse_plan("fsdp,tp8-blocking")
    assert "tensor parallel 8 (blocking communication)" in blocking.text(64)
    assert "blocking" not in parse_plan("fsdp,tp8").text(64)
    assert blocking.to_dict()["tensor_parallel_comm"] == "blocking"
    post = parse_plan("hsdp+backward-post,mb2")
    assert "(BACKWARD_POST)" in post.text(16) and post.to_dict()["backward_prefetch"] == "post"
    assert "BACKWARD" not in parse_plan("hsdp,mb2").text(16)
    reduced_after = parse_plan("ddp+blocking,mb2")
    assert "gradients reduced after the backward (blocking)" in reduced_after.text(16)
    assert reduced_after.to_dict()["data_parallel_comm"] == "blocking"
    assert parse_plan("ddp,mb2").to_dict()["data_parallel_comm"] == "overlapped"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "zero4",
        "fsdp+fast",
        "fsdp,tpx",
        "ddp,mb0",
        "fsdp,pp2-blocking",
        "fsdp,tp8-async",
        "zero2+backward-post",  # SHARD_GRAD_OP keeps the weights gathered: no backward gather to time
        "fsdp+blocking",  # FSDP reduces layer by layer inside the backward: nothing to wait for after it
    ],
)
def test_bad_tokens_are_one_line_errors(token: str) -> None:
    with pytest.raises(PerdollarError):
        parse_plan(token)


@pytest.fixture(scope="module")
def setting():
    cat = catalog.load()
    return load_llm_workload("gpt-125m").architecture, cat.accelerators["A100-SXM4-40GB"]


def _brute_force(arch, accelerator, gpus_per_node, nodes, global_batch, seq_len):
    best = None
    for strategy, tp, pp, ac, mb in itertools.product(
        ("ddp", "zero1", "zero2", "fsdp", "hsdp"), (1, 2), (1, 2), (False, True), (1, 2, 4, 8, 16, 32, 64)
    ):
        plan = TrainingPlan(strategy, tp, pp, ac, mb)
        if plan_problem(plan, arch, gpus_per_node, nodes, global_batch):
            continue
        p = predict_llm_training(
            arch,
            accelerator,
            gpus_per_node=gpus_per_node,
            nodes=nodes,
            plan=plan,
            seq_len=seq_len,
            global_batch=global_batch,
            network_gbps=100.0,
            efa_interfaces=0,
        )
        if p.fits and (best is None or p.tokens_per_second > best.tokens_per_second):
            best = p
    return best


@pytest.mark.parametrize("memory_gib", [40.0, 3.0])
def test_planner_matches_brute_force(setting, memory_gib: float) -> None:
    arch, a100 = setting
    accelerator = dataclasses.replace(a100, memory_gib=memory_gib)  # 3 GiB: replicas cannot hold big batches
    expected = _brute_force(arch, accelerator, 2, 2, 64, 1024)
    found = search_plans(
        arch,
        accelerator,
        gpus_per_node=2,
        nodes=2,
        seq_len=1024,
        global_batch=64,
        network_gbps=100.0,
        efa_interfaces=0,
    )
    assert expected is not None and found.best is not None
    assert found.best.fits
    assert found.best.tokens_per_second >= (1 - SIMPLER_PLAN_MARGIN) * expected.tokens_per_second
    assert found.best.tokens_per_second <= expected.tokens_per_second * (1 + 1e-9)


def test_a_small_model_keeps_plain_data_parallelism(setting) -> None:
    arch, a100 = setting
    found = search_plans(arch, a100, gpus_per_node=8, nodes=1, seq_len=1024, global_batch=256)
    assert found.best is not None
    assert found.best.plan.strategy == "ddp"
    assert found.best.plan.tensor_parallel == 1 and not found.best.plan.activation_checkpointing


def test_nothing_fits_reports_the_nearest_miss(setting) -> None:
    arch, a100 = setting
    # 0.18 GiB after the 10% reserve: not even the weights and gradients, the optimizer offloaded
    tiny = dataclasses.replace(a100, memory_gib=0.2)
    found = search_plans(arch, tiny, gpus_per_node=1, nodes=1, seq_len=1024, global_batch=8)
    assert found.best is None and found.nearest_miss is not None
    assert not found.nearest_miss.fits
    reason = found.nearest_miss.fit_reason
    assert reason.startswith("needs ") and reason.endswith("has 0.2 GiB (0.2 at the tightest)")
    # 16 bytes per parameter of state alone exceed it
    assert found.nearest_miss.memory_per_gpu_gib > 16 * arch.total_params / 2**30
