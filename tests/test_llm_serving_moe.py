"""Mixture-of-experts serving: DeepSeek-V3, Qwen3-30B-A3B and gpt-oss-120b configs written here,
their weights per GPU and KV bytes against hand counts, and expert parallelism's split and traffic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving import GroupShape, RequestShape, predict_llm_serving, serving_format
from perdollar.predict.llm_serving.expert_parallel import expert_exchange_bytes_per_gpu
from perdollar.predict.llm_serving.frame import serving_layouts
from perdollar.predict.llm_serving.load import serving_shape_problem
from perdollar.predict.llm_serving.timing import (
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    weight_bytes_per_gpu,
)
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

DEEPSEEK_V3 = {
    "model_type": "deepseek_v3", "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "intermediate_size": 18432, "moe_intermediate_size": 2048,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 3,
    "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
    "v_head_dim": 128, "vocab_size": 129280, "max_position_embeddings": 163840, "tie_word_embeddings": False,
}  # fmt: skip
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe", "hidden_size": 2048, "num_hidden_layers": 48, "num_attention_heads": 32,
    "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 6144, "moe_intermediate_size": 768,
    "num_experts": 128, "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 40960,
    "tie_word_embeddings": False, "decoder_sparse_step": 1, "mlp_only_layers": [],
}  # fmt: skip
GPT_OSS_120B = {
    "model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 36, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 128,
    "num_experts_per_tok": 4, "vocab_size": 201088, "max_position_embeddings": 131072,
    "sliding_window": 128, "attention_bias": True, "tie_word_embeddings": False,
}  # fmt: skip
FP8 = serving_format("fp8")
MXFP4 = serving_format("mxfp4")


def _written(tmp_path: Path, name: str, config: dict) -> DecoderArchitecture:
    path = tmp_path / name / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(config))
    return from_hf_config(load_config_file(path), name=name)


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def _deepseek_counts() -> tuple[int, int, int]:
    """(all parameters, routed experts, embedding + head), counted matrix by matrix."""
    h, heads, layers, moe_layers = 7168, 128, 61, 58
    queries = h * 1536 + 1536 + 1536 * heads * (128 + 64)  # down, its norm, up to 128 heads of 192
    latent = h * (512 + 64) + 512  # the compressed KV and the rotary key, the latent's norm
    attention = queries + latent + 512 * heads * (128 + 128) + heads * 128 * h
    routed = moe_layers * 256 * 3 * h * 2048
    shared = moe_layers * 3 * h * 2048
    router = moe_layers * h * 256
    dense = 3 * 3 * h * 18432
    norms = layers * 2 * h + h
    outer = 2 * 129280 * h
    return layers * attention + routed + shared + router + dense + norms + outer, routed, outer


def test_deepseek_v3_weights_per_gpu_and_mla_kv_bytes(tmp_path: Path) -> None:
    arch = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    total, routed, outer = _deepseek_counts()
    assert arch.total_params == total
    assert arch.params_by_role()["routed_experts"] == routed
    # fp8 body, 16-bit embedding and head, tensor parallel 8.
    assert weight_bytes_per_gpu(arch, FP8, GroupShape(8)) == pytest.approx(((total - outer) + 2 * outer) / 8)
    # Expert parallel 8, attention data parallel 8 (TP 1): each GPU holds 32 whole experts and a full
    # copy of everything else.
    shape = GroupShape(tensor_parallel=1, expert_parallel=8)
    assert weight_bytes_per_gpu(arch, FP8, shape) == pytest.approx(
        (total - outer - routed) + 2 * outer + routed / 8
    )
    # MLA caches the 512-wide latent and the 64-wide rotary key per token and layer, not 128 heads × 192.
    assert kv_bytes_per_token(arch, FP8) == 61 * (512 + 64)
    assert kv_bytes_per_token_per_gpu(arch, FP8, GroupShape(8)) == 61 * (512 + 64)  # every rank keeps it
    # Active as DeepSeek counts them (37B): the input embedding is a lookup, not a product.
    active = total - routed + routed * 8 // 256 - 129280 * 7168
    assert arch.active_params == active


def test_qwen3_30b_a3b_weights_and_gqa_kv(tmp_path: Path) -> None:
    arch = _written(tmp_path, "qwen3-30b-a3b", QWEN3_30B_A3B)
    h, layers = 2048, 48
    attention = h * (32 * 128 + 2 * 4 * 128) + 32 * 128 * h
    routed = layers * 128 * 3 * h * 768
    router = layers * h * 128
    outer = 2 * 151936 * h
    norms = layers * 2 * h + h  # (the per-head query and key norms' 256 a layer are not counted)
    total = layers * attention + routed + router + outer + norms
    assert arch.total_params == total
    assert arch.params_by_role()["routed_experts"] == routed
    assert weight_bytes_per_gpu(arch, FP8, GroupShape(2)) == pytest.approx(((total - outer) + 2 * outer) / 2)
    assert kv_bytes_per_token(arch, FP8) == layers * 2 * 4 * 128
    assert 3.0e9 < arch.active_params < 3.5e9  # "A3B": about 3.3 billion active


def test_gpt_oss_120b_mxfp4_experts_and_sliding_kv(tmp_path: Path) -> None:
    arch = _written(tmp_path, "gpt-oss-120b", GPT_OSS_120B)
    h, layers = 2880, 36
    q_out, kv = 64 * 64, 8 * 64
    attention = h * (q_out + 2 * kv) + q_out * h + (q_out + 2 * kv) + h + 64  # biases, o bias, sinks
    expert = 3 * h * 2880 + 2 * 2880 + h  # gate/up and down with their biases
    routed = layers * 128 * expert
    router = layers * (h * 128 + 128)
    outer = 2 * 201088 * h
    norms = layers * 2 * h + h
    assert arch.params_by_role()["routed_experts"] == routed
    assert arch.total_params == layers * attention + routed + router + outer + norms
    # MXFP4 experts (4.25 bits a weight), bf16 elsewhere: about 61 GiB, on one 80 GB GPU.
    body = arch.total_params - routed - outer
    expected = 2 * body + 2 * outer + routed * 4.25 / 8
    assert weight_bytes_per_gpu(arch, MXFP4, GroupShape(1)) == pytest.approx(expected)
    assert 58 < expected / 2**30 < 63
    # Half the layers keep a 128-token window: over 4096 tokens a token costs (18 + 18·128/4096)/36.
    per_token = kv_bytes_per_token_per_gpu(arch, MXFP4, GroupShape(1), context=4096)
    assert per_token == pytest.approx(2 * kv * 2 * (18 + 18 * 128 / 4096))


@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_expert_parallel_splits_the_expert_bytes_by_its_ranks(tmp_path: Path, ranks: int) -> None:
    arch = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    _, routed, _ = _deepseek_counts()
    alone = weight_bytes_per_gpu(arch, FP8, GroupShape(1))
    split = weight_bytes_per_gpu(arch, FP8, GroupShape(tensor_parallel=1, expert_parallel=ranks))
    assert alone - split == pytest.approx(routed * (1 - 1 / ranks))


def test_dispatch_and_combine_bytes_per_gpu(tmp_path: Path) -> None:
    arch = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    # 256 tokens over 8 ranks: 32 a rank, each to 8 experts, fp8 out and bf16 back, 7/8 off the rank.
    assert expert_exchange_bytes_per_gpu(arch, FP8, 8, 256) == pytest.approx(32 * 8 * 7168 * 3 * 7 / 8)


def test_attention_data_parallel_holds_the_mla_cache_once(
    tmp_path: Path, catalog: catalog_mod.Catalog
) -> None:
    arch = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    h200 = catalog.accelerator("H200")
    work = RequestShape(1000, 300)
    tensor = predict_llm_serving(arch, h200, FP8, work, shape=GroupShape(8))
    expert = predict_llm_serving(arch, h200, FP8, work, shape=GroupShape(1, expert_parallel=8))
    assert tensor.fits and expert.fits and expert.expert_parallel == 8
    # Each of the 8 attention ranks holds its own sequences: 8 × what one rank's memory holds, where
    # tensor parallelism copies every sequence's latent onto all 8.
    assert expert.max_concurrent_sequences > 4 * tensor.max_concurrent_sequences
    assert expert.max_concurrent_sequences % 8 == 0
    # Dispatch and combine replace the MLP's all-reduce; tensor parallelism has no all-to-all.
    assert expert.breakdown_ms["moe_all_to_all"] > 0 and tensor.breakdown_ms["moe_all_to_all"] == 0
    assert tensor.breakdown_ms["communication"] > 0


def test_expert_parallel_shapes_that_cannot_be(tmp_path: Path) -> None:
    arch = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    assert "divide" in serving_shape_problem(arch, GroupShape(1, expert_parallel=3))
    assert "multiple" in serving_shape_problem(arch, GroupShape(4, expert_parallel=2))
    assert serving_shape_problem(arch, GroupShape(2, expert_parallel=8)) == ""
    dense = from_hf_config({**QWEN3_30B_A3B, "model_type": "qwen3", "num_experts": 0}, name="dense")
    assert "dense" in serving_shape_problem(dense, GroupShape(1, expert_parallel=2))
    assert [s.expert_parallel for s in serving_layouts(arch, 8)] == [1, 8]
    assert [s.expert_parallel for s in serving_layouts(dense, 8)] == [1]


def test_the_three_moe_models_are_predicted_for_serving(tmp_path: Path, catalog: catalog_mod.Catalog) -> None:
    work = RequestShape(1000, 300)
    h200, h100 = catalog.accelerator("H200"), catalog.accelerator("H100")
    deepseek = _written(tmp_path, "deepseek-v3", DEEPSEEK_V3)
    qwen = _written(tmp_path, "qwen3-30b-a3b", QWEN3_30B_A3B)
    oss = _written(tmp_path, "gpt-oss-120b", GPT_OSS_120B)
    # DeepSeek-V3 in fp8 needs all 8 H200s; served expert parallel.
    assert not predict_llm_serving(deepseek, h200, FP8, work, shape=GroupShape(4)).fits
    for arch, chip, fmt, shape in (
        (deepseek, h200, FP8, GroupShape(1, expert_parallel=8)),
        (qwen, h100, FP8, GroupShape(1)),
        (qwen, h100, FP8, GroupShape(1, expert_parallel=2)),
        (oss, h100, MXFP4, GroupShape(1)),
    ):
        result = predict_llm_serving(arch, chip, fmt, work, shape=shape)
        assert result.fits, (arch.name, result.fit_reason)
        assert result.output_tokens_per_second > 0 and result.tpot_ms > 0 and result.ttft_ms > 0
        assert result.weights_gib_per_gpu * 2**30 == pytest.approx(weight_bytes_per_gpu(arch, fmt, shape))
