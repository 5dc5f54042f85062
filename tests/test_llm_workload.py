"""LLM workloads from reference names and config.json files; the analytic parameter count against
the real transformers model built on the meta device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdollar.errors import PerdollarError
from perdollar.workload.llm import from_hf_config, llm_reference_names, load_llm_workload, looks_like_llm
from perdollar.workload.llm.meta_model import meta_parameter_count

SMALL_CONFIGS = {
    "llama": {
        "model_type": "llama",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "intermediate_size": 688,
        "vocab_size": 1000,
    },
    "qwen2": {
        "model_type": "qwen2",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "intermediate_size": 688,
        "vocab_size": 1000,
        "tie_word_embeddings": True,
    },
    "mixtral": {
        "model_type": "mixtral",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "intermediate_size": 512,
        "vocab_size": 1000,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "gpt2": {
        "model_type": "gpt2",
        "n_embd": 256,
        "n_layer": 2,
        "n_head": 8,
        "vocab_size": 1000,
        "n_positions": 512,
        "bos_token_id": 0,
        "eos_token_id": 0,
    },
    "gpt_neox": {
        "model_type": "gpt_neox",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "intermediate_size": 1024,
        "vocab_size": 1000,
    },
    "falcon": {
        "model_type": "falcon",
        "hidden_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "vocab_size": 1000,
        "new_decoder_architecture": False,
        "multi_query": True,
    },
}


@pytest.mark.parametrize("family", sorted(SMALL_CONFIGS))
def test_analytic_count_matches_the_meta_model(family: str) -> None:
    config = SMALL_CONFIGS[family]
    analytic = from_hf_config(config).total_params
    real = meta_parameter_count(config)
    # Biases of MLPs and norms are left out of the analytic count: under 0.5% here.
    assert analytic == pytest.approx(real, rel=0.005)


def test_published_sizes_of_the_references() -> None:
    sizes = {"llama-3.1-8b": 8.03e9, "llama-3.1-70b": 70.55e9, "gpt-125m": 125e6, "gpt-175b": 174.6e9}
    for name, size in sizes.items():
        assert load_llm_workload(name).architecture.total_params == pytest.approx(size, rel=0.002)
    assert {"llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "gpt-1.3b"} <= set(llm_reference_names())


def test_config_file_and_folder(tmp_path: Path) -> None:
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(SMALL_CONFIGS["llama"]))
    from_folder = load_llm_workload(str(folder), seq_len=512, global_batch=32)
    from_file = load_llm_workload(str(folder / "config.json"), seq_len=512, global_batch=32)
    assert from_folder.name == "my-model" and from_folder.seq_len == 512
    assert from_folder.fingerprint == from_file.fingerprint
    assert load_llm_workload(str(folder), seq_len=1024).fingerprint != from_folder.fingerprint
    assert load_llm_workload(str(folder), finetune="qlora").fingerprint != from_folder.fingerprint


def test_other_references_stay_on_their_own_path() -> None:
    assert looks_like_llm("llama-3.1-8b") and looks_like_llm("some/config.json")
    assert not looks_like_llm("llama-8b") and not looks_like_llm("vit-b16")


def test_unknown_name_suggests_close_matches() -> None:
    with pytest.raises(PerdollarError) as error:
        load_llm_workload("llama-3.1-7b")
    assert "llama-3.1-8b" in str(error.value)


def test_encoder_config_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "model_type": "bert",
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "vocab_size": 30522,
            }
        )
    )
    with pytest.raises(PerdollarError, match="not a decoder-only"):
        load_llm_workload(str(path))


def test_malformed_json_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text("{not json")
    with pytest.raises(PerdollarError, match="is not JSON"):
        load_llm_workload(str(path))
