"""Current architectures read right: published parameter counts, transformers' own model role by
role, KV-cache bytes per token by attention type, and the memory and names that follow from them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from llm_model_cards import CARDS, ModelCard, published
from perdollar.predict.llm_serving.formats import serving_format
from perdollar.predict.llm_serving.timing import GroupShape, kv_bytes_per_token_per_gpu, weight_bytes_per_gpu
from perdollar.workload.llm import from_hf_config, load_llm_workload
from perdollar.workload.llm.census import VERIFIED_TYPES
from perdollar.workload.llm.workload import CONFIG_DIR, llm_reference_names

IDS = [card.name for card in CARDS]
GIB = 1024**3

# KV-cache bytes per token at 16 bits, every layer, worked by hand from each config:
# layers × 2 (key and value) × KV heads × head width × 2 bytes; MLA: layers × (latent + rotary key) × 2.
KV_BYTES = {
    "llama-3.1-8b": 32 * 2 * 8 * 128 * 2,
    "llama-3.1-70b": 80 * 2 * 8 * 128 * 2,
    "llama-3.2-1b": 16 * 2 * 8 * 64 * 2,
    "llama-3.2-3b": 28 * 2 * 8 * 128 * 2,
    "llama-4-scout-17b-16e": 48 * 2 * 8 * 128 * 2,
    "mistral-7b-v0.1": 32 * 2 * 8 * 128 * 2,
    "mixtral-8x7b": 32 * 2 * 8 * 128 * 2,
    "qwen2.5-7b": 28 * 2 * 4 * 128 * 2,
    "qwen1.5-moe-a2.7b": 24 * 2 * 16 * 128 * 2,
    "qwen3-8b": 36 * 2 * 8 * 128 * 2,
    "qwen3-30b-a3b": 48 * 2 * 4 * 128 * 2,
    "deepseek-v2-lite": 27 * (512 + 64) * 2,
    "deepseek-v3": 61 * (512 + 64) * 2,
    "gpt-oss-20b": 24 * 2 * 8 * 64 * 2,
    "gpt-oss-120b": 36 * 2 * 8 * 64 * 2,
    "gemma-2-9b": 42 * 2 * 8 * 256 * 2,
    "gemma-3-1b": 26 * 2 * 1 * 256 * 2,
    "phi-3-mini-4k": 32 * 2 * 32 * 96 * 2,
    "phi-4": 40 * 2 * 10 * 128 * 2,
    "olmo-2-7b": 32 * 2 * 32 * 128 * 2,
}
# (layers that keep a window only, the window), from each family's layer layout.
WINDOWS = {
    "llama-4-scout-17b-16e": (36, 8192),  # three of every four layers attend within 8192-token chunks
    "mistral-7b-v0.1": (32, 4096),
    "gpt-oss-20b": (12, 128),
    "gpt-oss-120b": (18, 128),
    "gemma-2-9b": (21, 4096),
    "gemma-3-1b": (22, 512),  # five of every six layers
    "phi-3-mini-4k": (32, 2047),
}


def test_the_table_covers_fifteen_architectures_and_each_family_perdollar_verifies() -> None:
    assert len(CARDS) >= 15 and set(KV_BYTES) == set(IDS)
    types = {card.config["model_type"] for card in CARDS}
    assert types | {"gpt2", "mpt"} == VERIFIED_TYPES


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_total_and_active_parameters_are_the_published_ones(card: ModelCard) -> None:
    arch = from_hf_config(card.config, name=card.name)
    if card.total is not None:
        value, allowed = published(card.total)
        assert abs(arch.total_params - value) <= allowed, (arch.total_params, value)
    active = arch.active_params + (arch.lookup_params if card.active_counts_embedding else 0)
    value, allowed = published(card.active)
    assert abs(active - value) <= allowed, (active, value)


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_each_role_is_what_transformers_builds(card: ModelCard) -> None:
    """perdollar's own reading of the family against transformers' model on the meta device."""
    pytest.importorskip("transformers")
    from perdollar.workload.llm.meta_model import role_census

    theirs = role_census(card.config)
    ours = from_hf_config(card.config).params_by_role()
    total = sum(theirs.values())
    assert abs(sum(ours.values()) - total) <= 0.001 * total
    for role in set(ours) | set(theirs):
        if max(ours.get(role, 0), theirs.get(role, 0)) > 0.001 * total:
            assert ours.get(role, 0) == pytest.approx(theirs.get(role, 0), rel=0.01), role


@pytest.mark.parametrize("card", CARDS, ids=IDS)
def test_kv_cache_bytes_per_token_follow_the_attention_type(card: ModelCard) -> None:
    arch = from_hf_config(card.config)
    assert arch.kv_elements_per_token * 2 == KV_BYTES[card.name]
    assert (arch.sliding_layers, arch.sliding_window) == WINDOWS.get(card.name, (0, 0))


def test_nemotron_mlp_is_up_and_down_only_as_transformers_builds_it() -> None:
    # Nemotron-4-340B's shape (NVIDIA's config): a squared-ReLU MLP of two matrices, no gate.
    pytest.importorskip("transformers")
    from perdollar.workload.llm.meta_model import role_census

    config = {
        "model_type": "nemotron", "hidden_size": 18432, "intermediate_size": 73728, "num_hidden_layers": 96,
        "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 192, "vocab_size": 256000,
        "max_position_embeddings": 4096, "hidden_act": "relu2", "tie_word_embeddings": False,
    }  # fmt: skip
    arch = from_hf_config(config)
    assert not arch.gated_mlp
    mlp = 96 * 2 * 18432 * 73728
    assert arch.params_by_role()["dense_mlp"] == mlp
    assert arch.params_by_role()["dense_mlp"] == pytest.approx(role_census(config)["dense_mlp"], rel=0.001)


def test_sliding_window_layers_keep_their_window_only() -> None:
    card = next(c for c in CARDS if c.name == "gpt-oss-120b")
    arch = from_hf_config(card.config)
    per_layer = 2 * 8 * 64
    assert arch.kv_elements(100) == 36 * per_layer * 100
    assert arch.kv_elements(10_000) == 18 * per_layer * 10_000 + 18 * per_layer * 128
    bf16 = serving_format("bf16")
    short = kv_bytes_per_token_per_gpu(arch, bf16, GroupShape(), context=100)
    long = kv_bytes_per_token_per_gpu(arch, bf16, GroupShape(), context=10_000)
    assert short == KV_BYTES["gpt-oss-120b"] and long < 0.52 * short


def test_the_latent_of_multi_head_latent_attention_is_not_split_by_tensor_parallelism() -> None:
    card = next(c for c in CARDS if c.name == "deepseek-v3")
    arch = from_hf_config(card.config)
    bf16 = serving_format("bf16")
    assert kv_bytes_per_token_per_gpu(arch, bf16, GroupShape(tensor_parallel=8)) == 61 * 576 * 2


def test_deepseek_v3_in_fp8_fits_eight_h200_with_its_experts_split() -> None:
    arch = load_llm_workload("deepseek-v3").architecture
    per_gpu = weight_bytes_per_gpu(arch, serving_format("fp8"), GroupShape(tensor_parallel=8)) / GIB
    assert 75 < per_gpu < 82  # 671B at a byte each, the 16-bit embedding and head aside, over 8
    done = run_perdollar(
        "predict", "deepseek-v3", "--inference", "--accelerator", "H200", "--gpus", "8",
        "--tensor-parallel", "8", "--precision", "fp8", "--input-tokens", "1000", "--output-tokens", "300",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-800:]
    assert "does not fit" not in done.stdout and "weights 78." in done.stdout


@pytest.mark.parametrize("name", sorted(llm_reference_names()))
def test_every_built_in_config_is_read_as_transformers_builds_it(name: str) -> None:
    pytest.importorskip("transformers")
    from perdollar.workload.llm.meta_model import role_census

    config = json.loads((CONFIG_DIR / f"{name}.json").read_text())
    assert config["model_type"] in VERIFIED_TYPES
    if config["model_type"] == "mpt":
        # Written from LLM Foundry's YAML with GPT-2's key names (n_layer, n_head), which
        # transformers' MptConfig does not read (it wants n_layers, n_heads, expansion_ratio).
        pytest.skip("transformers' MPT reads other key names than these configs use")
    total = sum(role_census(config).values())
    assert from_hf_config(config).total_params == pytest.approx(total, rel=0.01)


def _write(folder: Path, config: dict[str, object], name: str = "config.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(config))
    return path


TINY_LLAMA = {
    "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 256,
}  # fmt: skip


def test_a_key_perdollar_does_not_read_is_named(tmp_path: Path) -> None:
    path = _write(tmp_path, {**TINY_LLAMA, "num_frobnicator_layers": 3})
    for serving in (
        (),
        ("--inference", "--accelerator", "H100", "--input-tokens", "100", "--output-tokens", "9"),
    ):
        done = run_perdollar("predict", str(path), *(serving or ("--instance", "p5.48xlarge")))
        assert done.returncode == 0, done.stderr[-800:]
        assert "num_frobnicator_layers" in done.stderr


def test_a_family_transformers_cannot_build_is_read_with_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, {**TINY_LLAMA, "model_type": "frobnet"})
    done = run_perdollar("predict", str(path), "--instance", "p5.48xlarge")
    assert done.returncode == 0, done.stderr[-800:]
    assert "cannot build model_type 'frobnet'" in done.stderr


def test_language_model_names_resolve_to_the_language_model() -> None:
    done = run_perdollar("recommend", "llama-3-8b", "--tokens", "1e9", "--top", "1")
    assert done.returncode == 0, done.stderr[-800:]
    assert "llama-3-8b" in done.stdout and "tokens" in done.stdout
    near = run_perdollar("predict", "llama-3-8", "--instance", "p5.48xlarge")
    assert near.returncode == 2 and "did you mean 'llama-3-8b'" in near.stderr


def test_profile_prints_total_active_and_kv_counts_of_a_mixture_of_experts(tmp_path: Path) -> None:
    config = {
        **TINY_LLAMA, "model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 2,
    }  # fmt: skip
    done = run_perdollar("profile", str(_write(tmp_path, config)), "--json")
    assert done.returncode == 0, done.stderr[-800:]
    document = json.loads(done.stdout)
    attention = 64 * (64 + 2 * 32) + 64 * 64
    expert = 3 * 64 * 128
    layer = attention + 4 * expert + 64 * 4 + 2 * 64
    assert document["params"] == 2 * layer + 2 * 256 * 64 + 64
    # The input embedding (256 × 64) is a lookup: not active.
    assert document["active_params_per_token"] == document["params"] - 2 * 2 * expert - 256 * 64
    assert document["kv_cache_bytes_per_token"] == 2 * 2 * 2 * 16 * 2
    assert document["params_by_role"]["routed_experts"] == 2 * 4 * expert


def test_where_transformers_builds_other_shapes_its_counts_are_used(tmp_path: Path) -> None:
    # GPT-NeoX's config gives the MLP 24,576 wide when the key is absent; perdollar alone would
    # assume four times the width. Outside the verified families transformers' model decides.
    config = {
        "model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "vocab_size": 256, "max_position_embeddings": 256,
    }  # fmt: skip
    path = _write(tmp_path, config)
    done = run_perdollar("profile", str(path), "--json")
    assert done.returncode == 0, done.stderr[-800:]
    assert "transformers' counts are used" in done.stderr and "dense_mlp" in done.stderr
    mlp = json.loads(done.stdout)["params_by_role"]["dense_mlp"]
    assert mlp == 2 * (2 * 64 * 24576 + 24576 + 64)  # up and down projections with their biases


@pytest.mark.parametrize("name", ["llama-3.1-8b", "mixtral-8x7b", "qwen2.5-7b", "gpt-1.3b", "mpt-7b"])
def test_built_in_models_still_find_their_shipped_traces(name: str) -> None:
    """Reading more of a config leaves the trace keys of the models it read right before unchanged."""
    from perdollar.profile import llm_trace_store

    workload = load_llm_workload(name)
    key = llm_trace_store.shipped_key(workload.architecture, 1, workload.seq_len, "amp-bf16", True)
    assert llm_trace_store.load_shipped(key) is not None
