"""Per-GPU model-state bytes of every training plan against hand-computed figures for a small model."""

from __future__ import annotations

import pytest

from perdollar.predict.llm import TrainingPlan
from perdollar.predict.llm.memory import activation_bytes, lora_params, model_states
from perdollar.workload.llm.architecture import DecoderArchitecture

# hidden 64, 2 layers, 4 heads of 16 (MHA), gated MLP of 128, vocabulary 1000, untied head.
TINY = DecoderArchitecture(
    name="tiny",
    model_type="llama",
    hidden_size=64,
    num_layers=2,
    num_attention_heads=4,
    num_key_value_heads=4,
    head_dim=16,
    intermediate_size=128,
    vocab_size=1000,
    max_position_embeddings=128,
    gated_mlp=True,
)
# Per layer: attention 64·192 + 64·64 = 16384, MLP 3·64·128 = 24576, norms 128 → 41088.
# Two layers 82176, embedding and head 2·64000, final norm 64.
PARAMS = 210_240
ADAPTED = 2 * (16_384 + 24_576)  # the attention and MLP matrices LoRA adapts
# Rank 8: per layer q,k,v,o 4·(64 + 64) = 512 and gate, up, down 3·(64 + 128) = 576 → 1088 · 8 · 2 layers.
ADAPTERS_RANK_8 = 17_408


def states(strategy: str, dp: int = 8, in_node: int = 8, precision: str = "amp-bf16", **plan: object):
    return model_states(
        TINY,
        TrainingPlan(strategy, **plan),  # type: ignore[arg-type]
        data_parallel=dp,
        data_parallel_in_node=in_node,
        precision=precision,
    )


def test_parameter_count_of_the_small_model() -> None:
    assert TINY.total_params == PARAMS


@pytest.mark.parametrize(
    ("strategy", "weights", "gradients", "optimizer"),
    [
        ("ddp", 2 * PARAMS, 2 * PARAMS, 12 * PARAMS),
        ("zero1", 2 * PARAMS, 2 * PARAMS, 12 * PARAMS / 8),
        ("zero2", 2 * PARAMS, 2 * PARAMS / 8, 12 * PARAMS / 8),
        ("fsdp", 2 * PARAMS / 8, 2 * PARAMS / 8, 12 * PARAMS / 8),
    ],
)
def test_each_zero_stage_shards_what_it_should(
    strategy: str, weights: float, gradients: float, optimizer: float
) -> None:
    got = states(strategy)
    assert got.weights == pytest.approx(weights)
    assert got.gradients == pytest.approx(gradients)
    assert got.optimizer_states == pytest.approx(optimizer)
    assert got.total == pytest.approx(weights + gradients + optimizer)


def test_hsdp_shards_inside_a_host_only() -> None:
    got = states("hsdp", dp=32, in_node=8)
    assert got.total == pytest.approx(16 * PARAMS / 8)


def test_pure_bf16_keeps_no_master_weights() -> None:
    assert states("ddp", precision="bf16").total == pytest.approx(8 * PARAMS)
    assert states("ddp", precision="fp32").total == pytest.approx(16 * PARAMS)


def test_tensor_and_pipeline_parallel_split_before_sharding() -> None:
    got = states("fsdp", dp=2, tensor_parallel=2, pipeline_parallel=2)
    assert got.total == pytest.approx(16 * PARAMS / (2 * 2 * 2))


def test_cpu_offload_moves_the_optimizer_states_off_the_gpu() -> None:
    assert states("ddp", cpu_offload=True).optimizer_states == 0.0


def test_lora_trains_only_adapters_on_half_precision_frozen_weights() -> None:
    assert lora_params(TINY, 8) == ADAPTERS_RANK_8
    got = states("ddp", finetune="lora", lora_rank=8)
    assert got.weights == pytest.approx(2 * PARAMS + 2 * ADAPTERS_RANK_8)
    assert got.gradients == pytest.approx(2 * ADAPTERS_RANK_8)
    assert got.optimizer_states == pytest.approx(12 * ADAPTERS_RANK_8)


def test_qlora_stores_adapted_matrices_in_four_bits() -> None:
    got = states("ddp", finetune="qlora", lora_rank=8)
    frozen = ADAPTED * 4.127 / 8 + (PARAMS - ADAPTED) * 2
    assert got.weights == pytest.approx(frozen + 2 * ADAPTERS_RANK_8)
    assert got.optimizer_states == pytest.approx(12 * ADAPTERS_RANK_8)


def test_checkpointing_keeps_layer_inputs_and_recomputes_one_layer() -> None:
    plan = TrainingPlan("ddp", activation_checkpointing=True)
    got = activation_bytes(
        TINY, plan, layer_saved=100.0, other_saved=30.0, hidden_state=10.0, micro_batches=4
    )
    assert got == pytest.approx(2 * 10 + 100 + 30)
    plain = activation_bytes(
        TINY, TrainingPlan("ddp"), layer_saved=100.0, other_saved=30.0, hidden_state=10.0, micro_batches=4
    )
    assert plain == pytest.approx(2 * 100 + 30)


def test_first_pipeline_stage_holds_one_micro_batch_per_stage_in_flight() -> None:
    plan = TrainingPlan("ddp", pipeline_parallel=2)
    got = activation_bytes(
        TINY, plan, layer_saved=100.0, other_saved=30.0, hidden_state=10.0, micro_batches=8
    )
    # first stage: 1 layer × 2 micro-batches in flight = 200; last: 1 layer + logits = 130
    assert got == pytest.approx(200)
