"""A config.json chooses a model's shape, never the code that builds it: a Hub kernel or a class of
the config's own repository named in it is not fetched or imported."""

from __future__ import annotations

import sys

import pytest

from perdollar.workload.llm.meta_model import build_meta_model

TINY_LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
    "vocab_size": 256,
}


@pytest.mark.parametrize(
    "choice",
    [
        {"attn_implementation": "kernels-community/flash-attn3"},
        {"_attn_implementation": "kernels-community/flash-attn3"},
        {"experts_implementation": "kernels-community/moe"},
        {"auto_map": {"AutoModelForCausalLM": "modeling_evil.EvilForCausalLM"}, "trust_remote_code": True},
    ],
    ids=["attn", "private-attn", "experts", "auto-map"],
)
def test_code_named_by_a_config_is_neither_fetched_nor_imported(choice: dict[str, object]) -> None:
    before = set(sys.modules)
    model = build_meta_model({**TINY_LLAMA, **choice})
    assert type(model).__module__.startswith("transformers.models.llama")
    assert "kernels-community" not in str(getattr(model.config, "_attn_implementation", ""))
    assert not {m for m in set(sys.modules) - before if m.startswith(("kernels", "modeling_evil"))}
    assert sum(p.numel() for p in model.parameters()) > 0
