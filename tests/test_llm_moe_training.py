"""Training a mixture of experts: the grouped products, the exchange and the experts' states as a
trainer runs them, and a planner that spreads the experts (or offloads) before it says "does not fit"."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.llm import LLMEfficiency, TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm.moe_training import busiest_load
from perdollar.predict.llm.planner import plan_shapes, search_plans
from perdollar.workload.llm import load_llm_workload

SEQ = 4096


@pytest.fixture(scope="module")
def h100():  # type: ignore[no-untyped-def]
    return catalog.load().accelerators["H100-SXM5-80GB"]


def _arch(name: str):  # type: ignore[no-untyped-def]
    return load_llm_workload(name, seq_len=SEQ, global_batch=64).architecture


def _predict(arch, accelerator, token: str, nodes: int = 1, **kwargs):  # type: ignore[no-untyped-def]
    return predict_llm_training(
        arch, accelerator, gpus_per_node=8, nodes=nodes, plan=parse_plan(token), seq_len=SEQ,
        global_batch=64 * nodes, network_gbps=3200, **kwargs,
    )  # fmt: skip


def test_qwen3_moe_on_8_h100_with_expert_parallel_fits_and_shows_its_moe_parts(h100) -> None:  # type: ignore[no-untyped-def]
    arch = _arch("qwen3-30b-a3b")
    p = _predict(arch, h100, "fsdp+ac,ep8")
    assert p.fits
    assert p.plan.expert_parallel == 8
    for part in (
        "MoE router and permute",
        "MoE grouped GEMM (tile padding, busiest rank)",
        "expert all-to-all",
    ):
        assert p.breakdown_s[part] > 0
    # rows a local expert multiplies: the GPU's tokens × k × E_p ÷ E, times the busiest rank's load
    expected_rows = SEQ * arch.experts_per_token * 8 / arch.num_experts * p.moe["busiest_load"]
    assert p.moe["rows_per_expert"] == pytest.approx(expected_rows)
    assert p.moe["busiest_load"] > 1.0
    assert not p.moe["exchange_spans_hosts"]


def test_grouped_products_pay_for_fewer_rows_per_expert(h100) -> None:  # type: ignore[no-untyped-def]
    arch = _arch("qwen3-30b-a3b")
    balanced = LLMEfficiency(expert_load_skew=0.0)
    small = _predict(arch, h100, "fsdp+ac,mb1", efficiency=balanced)
    large = _predict(arch, h100, "fsdp+ac,mb4", efficiency=balanced)
    # 4096 tokens × 8 of 128 experts: 256 rows an expert, a fifth of a tile's padding more than 1024
    assert small.moe["rows_per_expert"] == pytest.approx(256)
    assert large.moe["rows_per_expert"] == pytest.approx(1024)
    assert small.moe["tile_efficiency"] < large.moe["tile_efficiency"] < 1.0
    assert small.breakdown_s["MoE grouped GEMM (tile padding, busiest rank)"] > 0


def test_busiest_rank_load_grows_with_the_ranks_and_vanishes_when_balance_is_forced() -> None:
    arch = _arch("qwen3-30b-a3b")
    tokens = 4096.0
    loads = [busiest_load(arch, TrainingPlan("fsdp", expert_parallel=ep), tokens) for ep in (1, 2, 8, 32)]
    assert loads[0] == 1.0
    assert loads == sorted(loads) and loads[-1] > loads[1]
    forced = busiest_load(arch, TrainingPlan("fsdp", expert_parallel=8), tokens, skew=0.0)
    assert 1.0 < forced < 1.05  # only the finite rows a rank receives


def test_memory_per_gpu_falls_with_expert_parallel_under_fsdp(h100) -> None:  # type: ignore[no-untyped-def]
    arch = _arch("qwen3-30b-a3b")
    memory = [_predict(arch, h100, f"fsdp+ac,ep{ep}").memory_per_gpu_gib for ep in (1, 2, 8)]
    # FSDP shards every state over all ranks already; the layers it gathers whole hold only the
    # rank's own experts
    assert memory[0] > memory[1] > memory[2]


def test_all_to_all_grows_when_expert_parallel_spans_hosts(h100) -> None:  # type: ignore[no-untyped-def]
    arch = _arch("qwen3-30b-a3b")
    inside = _predict(arch, h100, "fsdp+ac,ep8", nodes=2)
    across = _predict(arch, h100, "fsdp+ac,ep16", nodes=2)
    assert not inside.moe["exchange_spans_hosts"] and across.moe["exchange_spans_hosts"]
    assert across.breakdown_s["expert all-to-all"] > 2 * inside.breakdown_s["expert all-to-all"]


def test_planner_searches_expert_parallel_across_hosts() -> None:
    arch = _arch("qwen3-30b-a3b")
    shapes = plan_shapes(arch, 8, 2, finetune="full", lora_rank=16)
    assert {s.expert_parallel for s in shapes} >= {2, 4, 8, 16}


def test_mixtral_on_8_h100_fits_by_offloading_the_optimizer_and_says_so(h100) -> None:  # type: ignore[no-untyped-def]
    arch = _arch("mixtral-8x7b")
    found = search_plans(
        arch, h100, gpus_per_node=8, nodes=1, seq_len=SEQ, global_batch=64, network_gbps=3200,
        shapes=[TrainingPlan("zero2", tensor_parallel=2), TrainingPlan("fsdp", tensor_parallel=1)],
    )  # fmt: skip
    assert found.best is not None and found.best.fits
    assert found.best.plan.cpu_offload
    assert "optimizer offloaded to CPU" in found.best.plan.text(8)


def test_a_dense_model_has_no_moe_parts(h100) -> None:  # type: ignore[no-untyped-def]
    arch = load_llm_workload("llama-3.1-8b", seq_len=SEQ, global_batch=64).architecture
    p = _predict(arch, h100, "fsdp+ac")
    assert p.moe == {}
    assert not any(name.startswith("MoE") for name in p.breakdown_s)


def test_predict_json_shows_the_moe_parts() -> None:
    done = run_perdollar(
        "predict", "qwen3-30b-a3b", "--instance", "p5.48xlarge", "--seq-len", str(SEQ),
        "--global-batch", "64", "--plan", "fsdp+ac,ep8", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["moe"]["busiest_load"] > 1.0
    assert document["moe"]["rows_per_expert"] > 0
    assert document["breakdown_s"]["expert all-to-all"] > 0
    assert "ep8" in document["plan"]["token"].split(",")


def test_grouped_products_on_blackwell_run_at_their_own_rate(h100) -> None:  # type: ignore[no-untyped-def]
    """torchtitan's B200 runs are slower than the dense GEMMs' rate says where its H100 run is not:
    on Blackwell the experts' grouped products pay their own efficiency, even with balance forced."""
    arch = _arch("qwen3-30b-a3b")
    b200 = catalog.load().accelerators["B200"]
    balanced = LLMEfficiency(expert_load_skew=0.0)
    on_b200, on_h100 = (
        _predict(arch, gpu, "fsdp+ac,ep8,torchtitan", efficiency=balanced) for gpu in (b200, h100)
    )
    # Forced balance on Hopper: only the tiles' padding is left of the grouped products' extra time.
    hopper_extra = on_h100.breakdown_s["MoE grouped GEMM (tile padding, busiest rank)"] / on_h100.step_time_s
    blackwell_extra = (
        on_b200.breakdown_s["MoE grouped GEMM (tile padding, busiest rank)"] / on_b200.step_time_s
    )
    assert hopper_extra < 0.01 < 0.1 < blackwell_extra
    # At the Hopper rate the B200 would be as fast as its dense GEMMs make it.
    same_rate = LLMEfficiency(expert_load_skew=0.0, blackwell_grouped_gemm_efficiency=1.0)
    faster = _predict(arch, b200, "fsdp+ac,ep8,torchtitan", efficiency=same_rate)
    assert faster.tokens_per_second > 1.2 * on_b200.tokens_per_second
