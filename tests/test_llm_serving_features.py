"""Prefix caching, speculative decoding and disaggregated prefill/decode against hand physics."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving import (
    GroupShape,
    RequestShape,
    ServingEfficiency,
    decode_step_time,
    kv_bytes_per_token_per_gpu,
    max_concurrent_sequences,
    predict_llm_serving,
    prefill_time,
    serving_format,
)
from perdollar.predict.llm_serving.disaggregate import (
    Disaggregation,
    disaggregation,
    kv_transfer_s,
    predict_disaggregated,
)
from perdollar.predict.llm_serving.features import Speculation, checked_prefix_share, speculation
from perdollar.predict.llm_serving.timing import kv_cache_bytes_per_gpu
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
FP16 = serving_format("fp16")
# Round parameters, no host time, so that the arithmetic below is exact.
PLAIN = ServingEfficiency(bandwidth=0.80, kv_bandwidth=0.80, compute=0.5, step_overhead_s_per_layer=0.0)
BARE = ServingEfficiency(memory_utilisation=1.0, reserve_gib=0.0)


def _arch(name: str) -> DecoderArchitecture:
    return from_hf_config(load_config_file(CONFIGS / f"{name}.json"), name=name)


def _board() -> Accelerator:
    return Accelerator(
        key="TEST-GPU", vendor="test", family="test", architecture="Hopper", memory_gib=80.0,
        memory_bandwidth_gbps=1000.0, peak_fp32_tflops=50.0, peak_tf32_tflops=None, peak_fp16_tflops=400.0,
        peak_bf16_tflops=400.0, peak_fp8_tflops=800.0, peak_int8_tops=800.0, interconnect="NVLink",
        interconnect_bandwidth_gbps=400.0, software_stack="cuda",
    )  # fmt: skip


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def test_a_half_cached_prompt_halves_the_prefill_matmul_flops() -> None:
    arch, board = _arch("llama-3.1-8b"), _board()
    rate = 400e12 * PLAIN.compute
    pair_flops = 2.0 * arch.num_layers * arch.num_attention_heads * arch.head_dim
    whole = prefill_time(arch, FP16, board, GroupShape(), 1024, PLAIN)
    half = prefill_time(arch, FP16, board, GroupShape(), 1024, PLAIN, cached_tokens=512)
    params = arch.active_params + arch.lookup_params  # a dense model's products count every parameter
    assert whole.compute_s == pytest.approx((2.0 * params * 1024 + pair_flops * 1024**2) / rate)
    # The 512 new tokens still attend to the cached ones: only the cached tokens' own pairs are saved.
    matmul = 2.0 * params * 512
    assert half.compute_s == pytest.approx((matmul + pair_flops * (1024**2 - 512**2)) / rate)
    assert matmul == pytest.approx(0.5 * 2.0 * params * 1024)


def test_the_shared_prefix_is_held_once() -> None:
    arch, board = _arch("llama-3.1-8b"), _board()
    shape = GroupShape()
    per_token = kv_bytes_per_token_per_gpu(arch, FP16, shape, context=1280)
    free = kv_cache_bytes_per_gpu(arch, FP16, board, shape, BARE)
    plain = max_concurrent_sequences(arch, FP16, board, shape, 1280, BARE)
    shared = max_concurrent_sequences(arch, FP16, board, shape, 1280, BARE, shared_prefix_tokens=512)
    assert plain == int(free // (80 * 16 * per_token))
    assert shared == int((free - 32 * 16 * per_token) // (48 * 16 * per_token))


def test_prefix_caching_lowers_ttft_and_raises_the_ceiling(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("llama-3.1-8b"), catalog.accelerator("H100")
    plain = predict_llm_serving(arch, h100, FP16, RequestShape(4000, 200))
    cached = predict_llm_serving(arch, h100, FP16, RequestShape(4000, 200, prefix_share=0.75))
    assert cached.ttft_ms < plain.ttft_ms
    assert cached.max_concurrent_sequences > plain.max_concurrent_sequences
    assert cached.output_tokens_per_second > plain.output_tokens_per_second


def test_expected_tokens_per_verify_step() -> None:
    # (1 − 0.7⁴) / (1 − 0.7) = 0.7599 / 0.3
    assert Speculation("draft-model", 0.7, 3).expected_tokens == pytest.approx(2.533, abs=5e-4)
    assert Speculation("mtp", 0.8, 1).expected_tokens == pytest.approx(1.8)
    assert Speculation("mtp", 1.0, 2).expected_tokens == 3.0
    assert Speculation("mtp", 0.0, 2).expected_tokens == 1.0
    assert speculation("draft-model", None, None) == Speculation("draft-model", 0.7, 3)
    assert speculation("MTP", 0.9, None) == Speculation("mtp", 0.9, 1)


def test_a_verify_step_reads_once_and_multiplies_k_plus_one() -> None:
    arch, board = _arch("llama-3.1-8b"), _board()
    one = decode_step_time(arch, FP16, board, GroupShape(), 1, 1000, PLAIN)
    four = decode_step_time(arch, FP16, board, GroupShape(), 1, 1000, PLAIN, positions=4)
    assert four.memory_s == pytest.approx(one.memory_s)
    assert four.compute_s == pytest.approx(4 * one.compute_s)


def test_speculation_gains_shrink_as_the_batch_grows(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("llama-3.1-8b"), catalog.accelerator("H100")
    spec = Speculation("draft-model", 0.7, 3)
    gains = []
    for batch in (1, 64, 256):
        plain = predict_llm_serving(arch, h100, FP16, RequestShape(500, 200), batch=batch)
        fast = predict_llm_serving(arch, h100, FP16, RequestShape(500, 200, speculation=spec), batch=batch)
        gains.append(plain.tpot_ms / fast.tpot_ms)
    assert gains[0] > 1.8  # weight-bound: about 2.5 tokens for little more than one step's reads
    assert gains[0] > gains[1] > gains[2]
    assert fast.breakdown_ms["proposer"] > 0


def test_bad_feature_settings_are_refused() -> None:
    with pytest.raises(PerdollarError, match="unknown speculative"):
        speculation("medusa", None, None)
    with pytest.raises(PerdollarError, match="probability"):
        speculation("mtp", 1.5, None)
    with pytest.raises(PerdollarError, match="only with speculative"):
        speculation(None, 0.7, None)
    with pytest.raises(PerdollarError, match="outside"):
        checked_prefix_share(1.0)
    with pytest.raises(PerdollarError, match="xPyD"):
        disaggregation("3D1P")
    assert disaggregation("1p3d") == Disaggregation(1, 3)


def test_disaggregated_pools_and_the_kv_transfer(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("llama-3.1-8b"), catalog.accelerator("H100")
    work = RequestShape(2000, 200)
    shape = GroupShape()
    alone = predict_llm_serving(arch, h100, FP16, work, shape=shape)
    split = predict_disaggregated(arch, h100, FP16, work, Disaggregation(1, 3), shape=shape)
    # 2000 tokens × 128 KiB a token over NVLink's 450 GB/s a way, at 80% of it.
    transfer = kv_transfer_s(arch, FP16, h100, shape, work, across_hosts=False)
    assert transfer == pytest.approx(
        2000 * 131_072 / (h100.interconnect_bandwidth_gbps / 2 * 1e9 * 0.8) + 5e-6
    )
    assert split.ttft_ms == pytest.approx(alone.ttft_ms + transfer * 1e3)
    network = kv_transfer_s(arch, FP16, h100, shape, work, across_hosts=True)
    assert network > transfer
    # Decode replicas decode only: no prompt tokens ride in their steps.
    assert split.tpot_ms < alone.tpot_ms
    pools = split.breakdown_ms
    assert split.requests_per_second == pytest.approx(
        min(pools["prefill_pool_rps"], pools["decode_pool_rps"])
    )
    more_decode = predict_disaggregated(arch, h100, FP16, work, Disaggregation(1, 6), shape=shape)
    assert more_decode.breakdown_ms["decode_pool_rps"] == pytest.approx(2 * pools["decode_pool_rps"])


def test_features_through_the_command_line(tmp_path: Path) -> None:
    config = json.loads((CONFIGS / "qwen3-30b-a3b.json").read_text())
    path = tmp_path / "qwen3-moe.json"
    path.write_text(json.dumps(config))
    question = ("predict", str(path), "--inference", "--accelerator", "H100", "--gpus", "2", "--precision",
                "fp8", "--input-tokens", "1000", "--output-tokens", "300")  # fmt: skip

    done = run_perdollar(*question, "--expert-parallel", "2", "--speculative", "draft-model",
                         "--prefix-share", "0.5", "--json", columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["expert_parallel"] == 2 and out["tensor_parallel"] == 1 and out["replicas"] == 1
    spec = out["features"]["speculative_decoding"]
    assert spec["expected_tokens_per_step"] == pytest.approx(2.533, abs=5e-4)
    assert spec["tpot_ms"] < spec["tpot_ms_without"]
    prefix = out["features"]["prefix_caching"]
    assert prefix["cached_tokens"] == 500 and prefix["ttft_ms"] < prefix["ttft_ms_without"]
    assert out["features"]["expert_parallel"]["attention_data_parallel"] == 2
    text = run_perdollar(*question, "--prefix-share", "0.5", columns=200)
    assert text.returncode == 0 and "what prefix caching is worth" in text.stdout
    wrong = run_perdollar(*question, "--speculative", "medusa", columns=200)
    assert wrong.returncode != 0 and "unknown speculative decoding method" in wrong.stderr
    assert "Traceback" not in wrong.stderr


def test_a_static_batch_workload_changes_nothing_without_features(catalog: catalog_mod.Catalog) -> None:
    arch, h100 = _arch("llama-3.1-8b"), catalog.accelerator("H100")
    base = predict_llm_serving(arch, h100, FP16, RequestShape(500, 200), batch=8)
    same = predict_llm_serving(arch, h100, FP16, replace(RequestShape(500, 200), prefix_share=0.0), batch=8)
    assert base == same and "proposer" not in base.breakdown_ms
