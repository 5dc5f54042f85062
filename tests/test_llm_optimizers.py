"""The optimizer of a language model's training plan: its state bytes, its step's bytes, the paged
optimizers' spill to host memory, and --optimizer through predict and recommend."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.llm import TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm.device import optimizer_seconds
from perdollar.predict.llm.memory import GIB, model_states
from perdollar.predict.llm.optimizers import PAGING_BYTES_PER_S, optimizer_for
from perdollar.workload.llm import load_llm_workload

# 8-bit states: one byte per element plus a float32 scale per block of 256 elements, two moments.
EIGHT_BIT_MOMENTS = 2 * (1 + 4 / 256)
# Llama-3.1-8B's LoRA adapters at rank 16 on every attention and MLP matrix: 32 layers of
# q (4096 + 4096), k and v (4096 + 1024 each), o (4096 + 4096), gate, up and down (4096 + 14336 each).
LORA_8B_RANK_16 = 16 * 32 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096) + 3 * (4096 + 14336))


@pytest.fixture(scope="module")
def llama_8b():  # type: ignore[no-untyped-def]
    return load_llm_workload("llama-3.1-8b").architecture


@pytest.fixture(scope="module")
def h100():  # type: ignore[no-untyped-def]
    return catalog.load().accelerators["H100-SXM5-80GB"]


def _optimizer_bytes(arch, mode: str, optimizer: str, precision: str = "amp-bf16") -> float:  # type: ignore[no-untyped-def]
    plan = TrainingPlan("ddp", finetune=mode, optimizer=optimizer)
    states = model_states(arch, plan, data_parallel=1, data_parallel_in_node=1, precision=precision)
    return states.optimizer_states


@pytest.mark.parametrize(
    ("optimizer", "per_param"),
    [
        ("adamw", 4 + 2 * 4),  # fp32 master weight and two fp32 moments
        ("adamw-8bit", 4 + EIGHT_BIT_MOMENTS),
        ("paged-adamw-8bit", 4 + EIGHT_BIT_MOMENTS),  # paging keeps the same bytes
        ("paged-adamw", 4 + 2 * 4),
        ("sgd", 4 + 4),  # master weight and one fp32 momentum
    ],
)
def test_state_bytes_of_an_8b_full_fine_tune_and_lora(llama_8b, optimizer: str, per_param: float) -> None:  # type: ignore[no-untyped-def]
    assert _optimizer_bytes(llama_8b, "full", optimizer) == pytest.approx(llama_8b.total_params * per_param)
    assert _optimizer_bytes(llama_8b, "lora", optimizer) == pytest.approx(LORA_8B_RANK_16 * per_param)


def test_pure_bf16_keeps_no_master_and_half_precision_moments(llama_8b) -> None:  # type: ignore[no-untyped-def]
    params = llama_8b.total_params
    assert _optimizer_bytes(llama_8b, "full", "adamw", "bf16") == pytest.approx(params * 2 * 2)
    eight_bit = _optimizer_bytes(llama_8b, "full", "adamw-8bit", "bf16")
    assert eight_bit == pytest.approx(params * EIGHT_BIT_MOMENTS)


def test_the_step_moves_fewer_bytes_with_8_bit_states(h100) -> None:  # type: ignore[no-untyped-def]
    # Mixed precision: read gradient 2, master 4, moments; write master, moments and the bf16 weight 2.
    assert optimizer_for("adamw").step_bytes("amp-bf16") == 28.0
    eight_bit_bytes = optimizer_for("adamw-8bit").step_bytes("amp-bf16")
    assert eight_bit_bytes == pytest.approx(2 * (2 + 4 + EIGHT_BIT_MOMENTS))
    assert optimizer_for("sgd").step_bytes("amp-bf16") == 2 * (2 + 4 + 4)
    assert optimizer_seconds(h100, 8e9, "amp-bf16", "adamw") == optimizer_seconds(h100, 8e9, "amp-bf16")


def test_the_8_bit_step_costs_its_quantisation_work_not_its_bytes() -> None:
    # Measured on an H200: bitsandbytes' 8-bit step is bound by re-quantising each element, so its
    # time follows the elements and the GPU's CUDA-core rate, and a chip with more bandwidth but
    # the same float32 rate steps it no faster.
    accelerators = catalog.load().accelerators
    h200, h100 = accelerators["H200-SXM-141GB"], accelerators["H100-SXM5-80GB"]
    assert h200.peak_fp32_tflops == h100.peak_fp32_tflops
    assert h200.memory_bandwidth_gbps > h100.memory_bandwidth_gbps
    for name in ("adamw-8bit", "paged-adamw-8bit"):
        on_h200 = optimizer_seconds(h200, 8e9, "bf16", name)
        assert on_h200 == pytest.approx(optimizer_seconds(h100, 8e9, "bf16", name))
        assert optimizer_seconds(h200, 4e9, "bf16", name) == pytest.approx(on_h200 / 2, rel=1e-3)
        assert on_h200 > optimizer_seconds(h200, 8e9, "bf16", "adamw")  # AdamW streams its bytes
    adamw = optimizer_seconds(h100, 8e9, "bf16", "adamw")
    assert adamw > optimizer_seconds(h200, 8e9, "bf16", "adamw")  # memory-bound: the H200 is faster


def test_an_optimizer_stepped_in_the_backward_keeps_two_gradients_not_all(llama_8b) -> None:  # type: ignore[no-untyped-def]
    common = {"data_parallel": 1, "data_parallel_in_node": 1, "precision": "bf16"}
    after = model_states(llama_8b, parse_plan("ddp+ac,mb2"), **common)
    inside = model_states(llama_8b, parse_plan("ddp+ac+optimizer-in-backward,mb2"), **common)
    # The embedding (128,256 × 4,096) is the largest tensor: its gradient and the next one's, in bf16.
    assert inside.gradients == 2 * 128256 * 4096 * 2
    assert after.gradients == llama_8b.total_params * 2
    assert inside.weights == after.weights and inside.optimizer_states == after.optimizer_states
    tensor_parallel = model_states(llama_8b, parse_plan("ddp+optimizer-in-backward,tp2"), **common)
    assert tensor_parallel.gradients == inside.gradients / 2
    lora = model_states(llama_8b, parse_plan("ddp+optimizer-in-backward,lora16"), **common)
    assert lora.gradients == min(2 * 16 * 14336 * 2, lora_gradients(llama_8b, common))


def lora_gradients(arch, common) -> float:  # type: ignore[no-untyped-def]
    return model_states(arch, parse_plan("ddp,lora16"), **common).gradients


def test_optimizer_in_backward_reads_back_refuses_accumulation_and_offload(llama_8b, h100) -> None:  # type: ignore[no-untyped-def]
    plan = parse_plan("fsdp+ac+optimizer-in-backward,mb2,torchtune,paged-adamw-8bit")
    assert plan.optimizer_in_backward and parse_plan(plan.token()) == plan
    assert plan.to_dict()["optimizer_in_backward"] is True and "in the backward" in plan.text()
    with pytest.raises(PerdollarError, match="cannot accumulate"):
        parse_plan("ddp+optimizer-in-backward,ga4")
    with pytest.raises(PerdollarError, match="offloaded"):
        parse_plan("fsdp+offload+optimizer-in-backward")
    common = {"gpus_per_node": 1, "nodes": 1, "seq_len": 2048, "global_batch": 2, "precision": "bf16"}
    after = predict_llm_training(llama_8b, h100, plan=parse_plan("ddp+ac,mb2"), **common)
    in_backward = parse_plan("ddp+ac+optimizer-in-backward,mb2")
    inside = predict_llm_training(llama_8b, h100, plan=in_backward, **common)
    saved = (llama_8b.total_params - 2 * 128256 * 4096) * 2 / GIB
    assert after.memory_per_gpu_gib - inside.memory_per_gpu_gib == pytest.approx(saved, rel=0.11)
    assert inside.step_time_s == pytest.approx(after.step_time_s)  # the same work, only earlier


def test_a_full_fine_tune_that_does_not_fit_with_adamw_fits_with_8_bit_states(llama_8b, h100) -> None:  # type: ignore[no-untyped-def]
    common = {"gpus_per_node": 2, "nodes": 1, "seq_len": 2048, "global_batch": 2}
    adamw = predict_llm_training(llama_8b, h100, plan=parse_plan("zero1+ac,mb1"), **common)
    eight_bit = predict_llm_training(llama_8b, h100, plan=parse_plan("zero1+ac,mb1,adamw-8bit"), **common)
    assert not adamw.fits and eight_bit.fits
    # ZeRO-1 shards the states over the 2 GPUs: the difference is the states' bytes, halved.
    saved = llama_8b.total_params * (12 - (4 + EIGHT_BIT_MOMENTS)) / 2
    assert (adamw.memory_per_gpu_gib - eight_bit.memory_per_gpu_gib) * GIB == pytest.approx(saved)
    assert eight_bit.plan.to_dict()["optimizer"] == "adamw-8bit" and "AdamW 8-bit" in eight_bit.plan.text()


def test_a_paged_optimizer_spills_its_states_to_the_host_and_pays_pcie_for_them(llama_8b, h100) -> None:  # type: ignore[no-untyped-def]
    common = {"gpus_per_node": 1, "nodes": 1, "seq_len": 2048, "global_batch": 1}
    resident = predict_llm_training(llama_8b, h100, plan=parse_plan("ddp+ac,adamw-8bit"), **common)
    paged = predict_llm_training(llama_8b, h100, plan=parse_plan("ddp+ac,paged-adamw-8bit"), **common)
    assert not resident.fits and paged.fits
    spilled = paged.memory_gib["optimizer_states_paged_to_host"]
    assert spilled == pytest.approx(resident.memory_per_gpu_gib - paged.memory_gib["capacity"])
    assert paged.memory_per_gpu_gib == pytest.approx(paged.memory_gib["capacity"])
    extra = paged.breakdown_s["optimizer"] - resident.breakdown_s["optimizer"]
    assert extra == pytest.approx(2 * spilled * GIB / PAGING_BYTES_PER_S)
    # Only the states page: a model whose weights alone overflow the GPU still does not fit.
    arch_70b = load_llm_workload("llama-3.1-70b").architecture
    whole = predict_llm_training(arch_70b, h100, plan=parse_plan("ddp+ac,paged-adamw-8bit"), **common)
    assert not whole.fits and whole.memory_gib["weights"] > whole.memory_gib["capacity"]


def test_only_the_moments_page_not_the_float32_master_weights(llama_8b) -> None:  # type: ignore[no-untyped-def]
    l40s = catalog.load().accelerators["L40S"]
    common = {"gpus_per_node": 1, "nodes": 1, "seq_len": 2048, "global_batch": 1}
    paged = predict_llm_training(llama_8b, l40s, plan=parse_plan("ddp+ac,paged-adamw-8bit"), **common)
    moments = llama_8b.total_params * EIGHT_BIT_MOMENTS / GIB
    # Weights, gradients and the master copy alone (2 + 2 + 4 bytes a parameter) exceed the 48 GB.
    assert paged.memory_gib["optimizer_states_paged_to_host"] == pytest.approx(moments)
    assert not paged.fits and paged.memory_per_gpu_gib > paged.memory_gib["capacity"]


def test_plan_tokens_name_an_optimizer_other_than_adamw() -> None:
    plan = parse_plan("ddp,qlora16,mb4,hf,paged-adamw-8bit")
    assert plan.optimizer == "paged-adamw-8bit" and parse_plan(plan.token()) == plan
    assert plan.token().endswith(",paged-adamw-8bit")
    assert parse_plan("fsdp+ac,mb2").token() == "fsdp+ac,mb2"  # AdamW: as before
    assert parse_plan("fsdp+ac,mb2").to_dict()["optimizer"] == "adamw"
    with pytest.raises(PerdollarError, match="unknown optimizer"):
        TrainingPlan("ddp", optimizer="adam8")


def test_recommend_names_the_optimizer_and_refuses_an_unknown_one() -> None:
    done = run_perdollar(
        "recommend", "llama-3.1-8b", "--tokens", "1e8", "--finetune", "qlora", "--optimizer",
        "paged-adamw-8bit", "--max-nodes", "1", "--no-store", "--json", columns=200,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    estimates = [e for e in json.loads(done.stdout)["estimates"] if e.get("plan")]
    assert estimates and all(e["plan"].endswith(",paged-adamw-8bit") for e in estimates)
    wrong = run_perdollar(
        "recommend", "llama-3.1-8b", "--tokens", "1e8", "--optimizer", "adam8", "--no-store", columns=200
    )
    lines = [line for line in wrong.stderr.splitlines() if line.strip()]
    assert wrong.returncode == 2 and len(lines) == 1 and "unknown optimizer 'adam8'" in lines[0]
