"""A spot checkpoint's size follows the trained state: the whole model, or the adapters on the
matrices the framework adapts (NeMo's LoRA adapts the fused query-key-value projection only)."""

from __future__ import annotations

from perdollar.ask.llm import CHECKPOINT_BYTES_PER_PARAMETER, checkpoint_bytes
from perdollar.workload.llm import load_llm_workload


def _hand_counted_adapters(name: str, rank: int, qkv_only: bool) -> int:
    arch = load_llm_workload(name).architecture
    hidden, q_out, kv = arch.hidden_size, arch.num_attention_heads * arch.head_dim, arch.kv_dim
    qkv = hidden + q_out + 2 * kv  # one fused matrix: fan-in hidden, fan-out q + k + v
    if qkv_only:
        return rank * arch.num_layers * qkv
    attention = (hidden + q_out) + 2 * (hidden + kv) + (q_out + hidden)
    mlp = 3 * (hidden + arch.intermediate_size)
    return rank * arch.num_layers * (attention + mlp)


def test_nemo_lora_checkpoints_only_its_qkv_adapters() -> None:
    nemo = load_llm_workload("llama-3.1-8b", finetune="lora", lora_rank=16, framework="nemo")
    expected = _hand_counted_adapters("llama-3.1-8b", 16, qkv_only=True) * CHECKPOINT_BYTES_PER_PARAMETER
    assert checkpoint_bytes(nemo) == expected


def test_peft_lora_checkpoints_adapters_on_every_matrix() -> None:
    peft = load_llm_workload("llama-3.1-8b", finetune="lora", lora_rank=16, framework="hf")
    expected = _hand_counted_adapters("llama-3.1-8b", 16, qkv_only=False) * CHECKPOINT_BYTES_PER_PARAMETER
    assert checkpoint_bytes(peft) == expected


def test_full_fine_tuning_checkpoints_the_whole_model() -> None:
    full = load_llm_workload("llama-3.1-8b", finetune="full")
    assert checkpoint_bytes(full) == full.architecture.total_params * CHECKPOINT_BYTES_PER_PARAMETER
