"""torchao's row-wise FP8 recipe: its extra kernels against hand counts, and what they cost."""

from __future__ import annotations

import pytest

from perdollar.catalog import load as load_catalog
from perdollar.predict.llm import TrainingPlan, predict_llm_training
from perdollar.predict.llm.fp8 import rowwise_ops
from perdollar.workload.llm import from_hf_config, load_llm_workload

# hidden 64, 4 heads of 16 (query 64 wide), 2 key/value heads (32 wide), gated MLP 128 wide.
SMALL = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}  # fmt: skip


def test_rowwise_traffic_matches_a_hand_count_under_tensor_parallelism() -> None:
    """At TP 2 the column-parallel linears (q, k, v, gate, up) cast their whole input on each rank
    and the row-parallel ones (o, down) the whole gradient of their output; the rest is halved."""
    arch = from_hf_config(SMALL, name="small")
    tokens = 10
    forward, backward, rescale = rowwise_ops(arch, tokens, 2)
    # Inputs, forward: q, k, v, gate and up whole (64 each), o and down halved (64/2, 128/2).
    assert forward.bytes_read + forward.bytes_written == pytest.approx(5 * tokens * (5 * 64 + 32 + 64))
    # Output gradients, backward: q 64/2, k and v 32/2, gate and up 128/2 each, o and down whole (64);
    # weights halved: q 64·64, k and v 64·32, o 64·64, gate and up 64·128, down 128·64.
    weights = (64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 64 * 128 + 128 * 64) / 2
    gradients = 32 + 2 * 16 + 2 * 64 + 2 * 64
    assert backward.bytes_read + backward.bytes_written == pytest.approx(5 * tokens * gradients + 7 * weights)
    # The backward's outputs scaled once more: input gradients (as wide as the inputs) and weights.
    assert rescale.op_class == "elementwise" and forward.op_class == "unclassified"
    input_gradients = tokens * (5 * 64 + 32 + 64)
    assert rescale.bytes_read + rescale.bytes_written == pytest.approx(4 * (input_gradients + weights))


def test_a_frozen_base_makes_only_the_weights_transposed_copies() -> None:
    """LoRA computes no weight gradient of the base: none of the activations' transposed copies,
    and only the input gradient rescaled."""
    arch = from_hf_config(SMALL, name="small")
    forward, backward, rescale = rowwise_ops(arch, 10, 1, train_base=False)
    weights = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 64 * 128 + 128 * 64
    assert forward.bytes_read == 0
    assert backward.bytes_read + backward.bytes_written == pytest.approx(7 * weights)
    assert rescale.bytes_read + rescale.bytes_written == pytest.approx(4 * 10 * (6 * 64 + 128))


def test_mixture_of_experts_counts_each_token_through_its_experts_only() -> None:
    dense = from_hf_config(SMALL, name="dense")
    experts = from_hf_config({**SMALL, "model_type": "mixtral", "num_local_experts": 4,
                              "num_experts_per_tok": 1}, name="moe")  # fmt: skip
    dense_forward = rowwise_ops(dense, 1000, 1)[0]
    moe_forward = rowwise_ops(experts, 1000, 1)[0]
    # One expert of four per token: the MLP's activations cost as in the dense layer.
    assert moe_forward.bytes_read == pytest.approx(dense_forward.bytes_read)
    assert moe_forward.count == dense_forward.count + 9  # three linears in each of three more experts


def _tokens_per_second(precision: str, tensor_parallel: int) -> float:
    catalog = load_catalog()
    arch = load_llm_workload("llama-3.1-8b").architecture
    plan = TrainingPlan(strategy="fsdp", tensor_parallel=tensor_parallel, micro_batch=2,
                        selective_checkpointing=True)  # fmt: skip
    return predict_llm_training(
        arch, catalog.accelerator("H100-SXM5-80GB"), gpus_per_node=8, nodes=1, plan=plan, seq_len=8192,
        global_batch=32, precision=precision,
    ).tokens_per_second  # fmt: skip


def test_rowwise_scaling_is_slower_than_per_tensor_and_more_so_under_tensor_parallelism() -> None:
    alone = _tokens_per_second("fp8", 1) / _tokens_per_second("fp8-rowwise", 1)
    split = _tokens_per_second("fp8", 8) / _tokens_per_second("fp8-rowwise", 8)
    assert alone > 1.05  # the transposed casts cost something even on one rank
    assert split > alone + 0.1  # and each of 8 ranks casts the whole hidden state
