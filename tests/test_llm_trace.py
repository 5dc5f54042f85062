"""A decoder layer's traced work against hand counts, its extension to any micro-batch, and the
traces kept on disk for the next process."""

from __future__ import annotations

import pytest

from perdollar.profile import llm_trace
from perdollar.profile.llm_trace import layer_trace
from perdollar.workload.llm.architecture import DecoderArchitecture

ARCH = DecoderArchitecture(
    name="small",
    model_type="llama",
    hidden_size=256,
    num_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    head_dim=32,
    intermediate_size=512,
    vocab_size=2000,
    max_position_embeddings=1024,
    gated_mlp=True,
)
SEQ = 128


def _forward_matmul_flops(ops) -> float:
    return sum(op.flops for op in ops if op.phase == "forward" and op.op_class == "matmul")


def test_layer_matmuls_are_two_flops_per_weight_per_token() -> None:
    trace = layer_trace(ARCH, 1, SEQ)
    # q 256×256, k and v 256×64, o 256×256, gate/up/down 3 × 256×512
    weights = 256 * 256 + 2 * 256 * 64 + 256 * 256 + 3 * 256 * 512
    assert _forward_matmul_flops(trace.layer_ops) == pytest.approx(2 * SEQ * weights)
    # the LM head: 256 × 2000 per token
    assert _forward_matmul_flops(trace.other_ops) == pytest.approx(2 * SEQ * 256 * 2000)


def test_work_and_activations_grow_linearly_with_the_micro_batch() -> None:
    one, four = layer_trace(ARCH, 1, SEQ), layer_trace(ARCH, 4, SEQ)
    assert sum(op.flops for op in four.layer_ops) == pytest.approx(4 * sum(op.flops for op in one.layer_ops))
    assert _forward_matmul_flops(four.other_ops) == pytest.approx(4 * _forward_matmul_flops(one.other_ops))
    assert four.layer_saved_bytes == pytest.approx(4 * one.layer_saved_bytes)
    # bf16 residual stream: mixed precision at scale computes with half-precision weights
    assert one.layer_saved_bytes > 0 and one.hidden_state_bytes == SEQ * 256 * 2


def test_a_new_process_reads_the_trace_from_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    def forget() -> None:
        llm_trace._traced.cache_clear()
        llm_trace.layer_trace.cache_clear()

    forget()  # earlier tests traced into another home; trace into this one
    first = layer_trace(ARCH, 2, SEQ)
    forget()

    def refuse(*args: object) -> None:
        raise AssertionError("traced again instead of reading the stored trace")

    monkeypatch.setattr(llm_trace, "_trace_layers", refuse)
    again = layer_trace(ARCH, 2, SEQ)
    assert again == first
