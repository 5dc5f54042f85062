"""Frameworks in the training plan: LoRA's adapter work and memory against hand-computed figures,
interleaved and in-host pipelines, and the framework named in predict's JSON."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.llm import TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm.context_expert import (
    context_ring_bytes,
    expert_all_to_all_bytes,
    expert_all_to_all_seconds,
)
from perdollar.predict.llm.frameworks import FRAMEWORKS, framework_for
from perdollar.predict.llm.lora import adapter_flops_per_token, adapter_ops, adapter_saved_bytes_per_token
from perdollar.predict.llm.memory import model_states
from perdollar.predict.llm.stage import LLMEfficiency, stage_times
from perdollar.predict.llm.step import plan_problem
from perdollar.workload.llm.architecture import DecoderArchitecture

# hidden 64, 4 layers, 4 heads of 16 with 2 KV heads, gated MLP of 128, vocabulary 1000.
TINY = DecoderArchitecture(
    name="tiny-gqa",
    model_type="llama",
    hidden_size=64,
    num_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    intermediate_size=128,
    vocab_size=1000,
    max_position_embeddings=256,
    gated_mlp=True,
)
# Fan-in + fan-out of the adapted matrices: q 64+64, k 64+32, v 64+32, o 64+64, gate and up
# 64+128 each, down 128+64 → 128 + 96 + 96 + 128 + 3·192 = 1024.
FAN_SUM = 1024


def test_adapter_flops_are_six_r_times_fan_in_plus_fan_out() -> None:
    assert adapter_flops_per_token(TINY, 8) == 6 * 8 * FAN_SUM


def test_adapter_gemms_add_up_to_the_closed_form() -> None:
    tokens = 512
    gemms = [op for op in adapter_ops(TINY, tokens, 8, FRAMEWORKS["hf"]) if op.op_class == "matmul"]
    assert len(gemms) == 7 * 6  # per matrix: two products forward, four backward
    assert sum(op.flops for op in gemms) == pytest.approx(tokens * 6 * 8 * FAN_SUM)
    forward = sum(op.flops for op in gemms if op.phase == "forward")
    assert forward == pytest.approx(tokens * 2 * 8 * FAN_SUM)


def test_peft_modules_move_every_input_and_fused_lora_moves_none() -> None:
    tokens = 100
    fan_in = 64 * 6 + 128  # q, k, v, o, gate, up read 64 wide; down reads 128
    hf = [op for op in adapter_ops(TINY, tokens, 8, FRAMEWORKS["hf"]) if op.op_class == "elementwise"]
    dropout = next(op for op in hf if op.name == "lora.dropout")
    assert dropout.bytes_read == pytest.approx(4.0 * tokens * 64)  # float32 adapters' input
    assert dropout.bytes_written == pytest.approx(5.0 * tokens * 64)  # and the one-byte mask
    casts = sum(op.bytes_read + op.bytes_written for op in hf if op.name == "lora.cast_in")
    assert casts == pytest.approx((2.0 + 4.0) * tokens * fan_in)
    unsloth = adapter_ops(TINY, tokens, 8, FRAMEWORKS["unsloth"])
    assert all(op.op_class == "matmul" for op in unsloth)


def test_saved_bytes_per_token_of_peft_and_of_fused_lora() -> None:
    narrow = 2.0 * 8 * 7  # A's rank-8 bf16 output, each of the 7 matrices
    # PEFT: each matrix its own bf16 dropout output and one-byte mask over its fan-in.
    assert adapter_saved_bytes_per_token(TINY, 8, FRAMEWORKS["hf"]) == narrow + 3.0 * (64 * 6 + 128)
    # Unsloth: each distinct input once: the attention's (64), o's (64), the MLP's (64), down's (128).
    assert adapter_saved_bytes_per_token(TINY, 8, FRAMEWORKS["unsloth"]) == narrow + 2.0 * (64 * 3 + 128)


def test_nemo_adapts_only_the_fused_query_key_value_projection_by_default() -> None:
    tokens, rank = 256, 32
    nemo = FRAMEWORKS["nemo"]
    gemms = [op for op in adapter_ops(TINY, tokens, rank, nemo) if op.op_class == "matmul"]
    # One adapter a layer, on linear_qkv (fan-in 64, fan-out q 64 + k 32 + v 32 = 128).
    assert len(gemms) == 6
    assert sum(op.flops for op in gemms) == pytest.approx(tokens * 6 * rank * (64 + 128))
    assert adapter_saved_bytes_per_token(TINY, rank, nemo) == 2.0 * rank + 2.0 * 64
    plan = TrainingPlan("ddp", finetune="lora", lora_rank=rank, framework="nemo")
    states = model_states(TINY, plan, data_parallel=1, data_parallel_in_node=1)
    assert states.trainable_params_per_gpu == rank * 4 * (64 + 128)  # 4 layers
    every_matrix = replace(plan, framework="hf")
    hf_states = model_states(TINY, every_matrix, data_parallel=1, data_parallel_in_node=1)
    assert hf_states.trainable_params_per_gpu == rank * 4 * FAN_SUM


def test_defaults_and_unknown_frameworks() -> None:
    assert framework_for(None, "lora").name == "hf"
    assert framework_for(None, "full").name == "megatron"
    with pytest.raises(PerdollarError, match="unknown training framework"):
        framework_for("keras", "full")
    with pytest.raises(PerdollarError, match="trains no LoRA"):
        TrainingPlan("ddp", finetune="lora", framework="torchtitan")


def test_plan_token_carries_the_framework_and_virtual_stages() -> None:
    plan = parse_plan("ddp,pp4,vp2,qlora16,mb2,nemo")
    assert (plan.framework, plan.virtual_stages, plan.finetune) == ("nemo", 2, "qlora")
    assert parse_plan(plan.token()) == plan
    assert plan.to_dict()["framework"] == "nemo"
    assert parse_plan("ddp,lora16").to_dict()["framework"] == "hf"
    with pytest.raises(PerdollarError, match="virtual pipeline stages"):
        TrainingPlan("ddp", virtual_stages=2)


@pytest.fixture(scope="module")
def h100():  # type: ignore[no-untyped-def]
    return catalog.load().accelerators["H100-SXM5-80GB"]


def _predict(accelerator, plan: TrainingPlan, *, nodes: int = 1, seq_len: int = 256):  # type: ignore[no-untyped-def]
    return predict_llm_training(
        TINY, accelerator, gpus_per_node=8, nodes=nodes, plan=plan, seq_len=seq_len, global_batch=64,
        network_gbps=3200, efa_interfaces=32,
    )  # fmt: skip


def test_interleaved_bubble_is_p_minus_one_over_v_stage_times(h100) -> None:  # type: ignore[no-untyped-def]
    for virtual in (1, 2):
        plan = TrainingPlan("ddp", pipeline_parallel=2, virtual_stages=virtual, micro_batch=2)
        prediction = _predict(h100, plan, nodes=2)
        stage = stage_times(
            TINY, h100, prediction.plan, 256, "amp-bf16", LLMEfficiency(), 3200, 32, None, nodes=2
        )
        assert prediction.breakdown_s["pipeline bubble"] == pytest.approx((2 - 1) / virtual * stage.total)
        if virtual == 2:  # twice the boundaries each micro-batch crosses
            single = stage_times(
                TINY, h100, replace(prediction.plan, virtual_stages=1), 256, "amp-bf16", LLMEfficiency(),
                3200, 32, None, nodes=2,
            )  # fmt: skip
            assert stage.p2p == pytest.approx(2 * single.p2p)


def test_pipeline_inside_one_host_sends_over_its_links(h100) -> None:  # type: ignore[no-untyped-def]
    plan = TrainingPlan("ddp", pipeline_parallel=2, micro_batch=2)
    inside = stage_times(TINY, h100, plan, 256, "amp-bf16", LLMEfficiency(), 3200, 32, None, nodes=1)
    across = stage_times(TINY, h100, plan, 256, "amp-bf16", LLMEfficiency(), 3200, 32, None, nodes=2)
    assert 0 < inside.p2p < across.p2p
    assert _predict(h100, plan).plan.pipeline_parallel == 2


def test_unsloth_is_faster_and_smaller_than_peft(h100) -> None:  # type: ignore[no-untyped-def]
    peft = _predict(h100, TrainingPlan("ddp", finetune="lora", micro_batch=2), seq_len=256)
    unsloth = TrainingPlan("ddp", finetune="lora", micro_batch=2, framework="unsloth")
    fused = _predict(h100, unsloth, seq_len=256)
    assert fused.step_time_s < peft.step_time_s
    assert fused.memory_gib["activations"] < peft.memory_gib["activations"]


def test_predict_runs_a_pipeline_inside_one_host_and_names_the_framework() -> None:
    done = run_perdollar("predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--plan", "ddp",
                         "--pipeline-parallel", "2", "--seq-len", "2048", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)["plan"]
    assert plan["pipeline_parallel"] == 2 and plan["framework"] == "megatron"


def test_predict_refuses_an_unknown_framework_in_one_line() -> None:
    done = run_perdollar(
        "predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--finetune", "lora", "--framework", "keras"
    )
    assert done.returncode != 0
    assert "unknown training framework" in done.stderr and len(done.stderr.strip().splitlines()) == 1


TINY_MOE = replace(TINY, name="tiny-moe", num_experts=8, experts_per_token=2)
NO_LATENCY = cx.Link(bandwidth=1e9, latency=0.0, name="test")


def test_expert_all_to_all_sends_all_but_the_local_share() -> None:
    plan = TrainingPlan("ddp", expert_parallel=4)
    # 1000 tokens × 2 experts each × 64 wide × 2 bytes, of which each rank keeps a quarter.
    assert expert_all_to_all_bytes(TINY_MOE, plan, 1000) == pytest.approx(1000 * 2 * 64 * 2 * 3 / 4)
    # Two all-to-alls forward and two backward in each of the 4 MoE layers, one sequence of 256.
    seconds = expert_all_to_all_seconds(TINY_MOE, replace(plan, micro_batch=1), 256, 4, NO_LATENCY)
    assert seconds == pytest.approx(4 * 4 * 256 * 2 * 64 * 2 * 3 / 4 / 1e9)


def test_context_ring_sends_keys_and_values_c_minus_one_times_each_way() -> None:
    plan = TrainingPlan("ddp", context_parallel=4, micro_batch=2)
    chunk = 2 * 1024 / 4 * 2 * 32 * 2  # 2 sequences × 256 local tokens × K and V of 32 wide, bf16
    assert context_ring_bytes(TINY, plan, 1024) == pytest.approx(3 * 3 * chunk)
    assert context_ring_bytes(TINY, replace(plan, context_parallel=1), 1024) == 0.0


def test_expert_parallel_splits_the_experts_states_and_needs_experts() -> None:
    dense_problem = plan_problem(TrainingPlan("ddp", expert_parallel=2), TINY, 8, 1, 64)
    assert "mixture-of-experts" in dense_problem
    assert "does not divide the model's 8 experts" in plan_problem(
        TrainingPlan("ddp", expert_parallel=3), TINY_MOE, 6, 1, 60
    )
    whole = model_states(TINY_MOE, TrainingPlan("ddp"), data_parallel=8, data_parallel_in_node=8)
    split = model_states(
        TINY_MOE, TrainingPlan("ddp", expert_parallel=4), data_parallel=8, data_parallel_in_node=8
    )
    routed = TINY_MOE.params_by_role()["routed_experts"]
    assert whole.weights - split.weights == pytest.approx(2.0 * routed * 3 / 4)  # bf16 weights


def test_context_parallel_keeps_a_chunk_of_each_sequence(h100) -> None:  # type: ignore[no-untyped-def]
    whole = _predict(h100, TrainingPlan("ddp", micro_batch=1), seq_len=1024)
    split = _predict(h100, TrainingPlan("ddp", micro_batch=1, context_parallel=2), seq_len=1024)
    assert split.memory_gib["activations"] < whole.memory_gib["activations"]
    assert split.breakdown_s["context-parallel ring"] > 0


def test_peft_under_fsdp_keeps_gradients_of_the_frozen_base_too() -> None:
    def gradients(framework: str) -> float:
        plan = TrainingPlan("fsdp", finetune="lora", lora_rank=8, framework=framework)
        return model_states(TINY, plan, data_parallel=8, data_parallel_in_node=8).gradients

    # bf16 gradients of every parameter, sharded 8 ways; torchtune's FSDP2 keeps the adapters' only.
    assert gradients("hf") == pytest.approx(2.0 * TINY.total_params / 8)
    assert gradients("torchtune") == pytest.approx(2.0 * 8 * 4 * FAN_SUM / 8)  # rank 8, 4 layers
