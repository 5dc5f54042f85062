"""The LLM serving model against hand-computed KV-cache sizes, and its regimes on every GPU."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from perdollar import catalog as catalog_mod
from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving import (
    GroupShape,
    RequestShape,
    ServingEfficiency,
    at_rate,
    decode_step_time,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    max_concurrent_sequences,
    predict_llm_serving,
    prefill_time,
    serving_format,
)
from perdollar.predict.params import ModelParams
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
FP16 = serving_format("fp16")
FP8 = serving_format("fp8")
# No headroom: the whole memory holds weights and KV cache, so the arithmetic below is exact.
BARE = ServingEfficiency(memory_utilisation=1.0, reserve_gib=0.0)
# Round parameters (80% of the bandwidth for weights and KV, no overheads) for hand arithmetic.
PLAIN = ServingEfficiency(bandwidth=0.80, kv_bandwidth=0.80, step_overhead_s_per_layer=0.0)


def _arch(name: str) -> DecoderArchitecture:
    return from_hf_config(load_config_file(CONFIGS / f"{name}.json"), name=name)


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def _board(memory_gib: float) -> Accelerator:
    return Accelerator(
        key="TEST-GPU", vendor="test", family="test", architecture="Hopper", memory_gib=memory_gib,
        memory_bandwidth_gbps=1000.0, peak_fp32_tflops=50.0, peak_tf32_tflops=None, peak_fp16_tflops=400.0,
        peak_bf16_tflops=400.0, peak_fp8_tflops=800.0, peak_int8_tops=800.0, interconnect="NVLink",
        interconnect_bandwidth_gbps=400.0, software_stack="cuda",
    )  # fmt: skip


def test_kv_bytes_per_token_of_a_gqa_and_an_mha_model() -> None:
    # Llama 3.1 8B: 32 layers × 8 KV heads × 128 dims × (K and V) × 2 bytes.
    assert kv_bytes_per_token(_arch("llama-3.1-8b"), FP16) == 32 * 8 * 128 * 2 * 2 == 131_072
    assert kv_bytes_per_token(_arch("llama-3.1-8b"), FP8) == 65_536
    # GPT-3 1.3B (multi-head): 24 layers × 16 heads × 128 dims × 2 × 2 bytes.
    assert kv_bytes_per_token(_arch("gpt-1.3b"), FP16) == 24 * 2048 * 2 * 2 == 196_608


def test_kv_heads_split_over_tensor_parallel_ranks_until_one_each() -> None:
    arch = _arch("llama-3.1-8b")
    assert kv_bytes_per_token_per_gpu(arch, FP16, GroupShape(tensor_parallel=2)) == 65_536
    # 16 ranks, 8 KV heads: each rank still keeps one whole head.
    assert kv_bytes_per_token_per_gpu(arch, FP16, GroupShape(tensor_parallel=16)) == 32 * 1 * 128 * 2 * 2


def test_max_concurrent_sequences_by_hand() -> None:
    # GQA: 40 GiB less 8,030,261,248 × 2 bytes of weights = 26,889,150,464 bytes for the cache;
    # 1,000 tokens occupy 63 blocks of 16 = 1,008 tokens × 131,072 bytes = 132,120,576 bytes.
    board = _board(40.0)
    gqa = max_concurrent_sequences(_arch("llama-3.1-8b"), FP16, board, GroupShape(), 1000, BARE)
    assert gqa == 203  # 26,889,150,464 / 132,120,576 = 203.5
    # MHA: 40 GiB less 1,311,133,696 × 2 bytes = 40,327,405,568; 2,048 tokens × 196,608 bytes each
    # = 402,653,184 bytes a sequence.
    mha = max_concurrent_sequences(_arch("gpt-1.3b"), FP16, board, GroupShape(), 2048, BARE)
    assert mha == 100  # 40,327,405,568 / 402,653,184 = 100.15


def test_decode_is_bandwidth_bound_at_batch_one_and_compute_bound_at_large_batch_on_every_gpu(
    catalog: catalog_mod.Catalog,
) -> None:
    arch = _arch("llama-3.1-8b")
    checked = 0
    for key in sorted(catalog.accelerators):
        chip = catalog.accelerator(key)
        if not chip.memory_bandwidth_gbps or not (chip.peak_fp16_tflops or chip.peak_bf16_tflops):
            continue
        single = decode_step_time(arch, FP16, chip, GroupShape(), 1, 128, PLAIN)
        assert single.bottleneck == "memory-bandwidth", key
        # Batch 1 reads every weight once but the input embedding (gathered a row a token):
        # (8,030,261,248 − 128,256 × 4,096) × 2 bytes at 80% of the datasheet, times the ROCm
        # share on an AMD chip.
        stack = ModelParams().rocm_efficiency if chip.software_stack == "rocm" else 1.0
        weights_s = (8_030_261_248 - 525_336_576) * 2 / (chip.memory_bandwidth_gbps * 1e9 * 0.80 * stack)
        assert single.memory_s == pytest.approx(weights_s, rel=0.01), key
        crowded = decode_step_time(arch, FP16, chip, GroupShape(), batch=4096, context_tokens=16)
        assert crowded.bottleneck == "compute", key
        checked += 1
    assert checked > 40


def test_moe_reads_the_routed_experts_at_batch_one_and_all_of_them_at_large_batch() -> None:
    arch = _arch("mixtral-8x7b")
    board = _board(200.0)
    one = decode_step_time(arch, FP16, board, GroupShape(), batch=1, context_tokens=1, efficiency=PLAIN)
    many = decode_step_time(arch, FP16, board, GroupShape(), batch=512, context_tokens=1, efficiency=PLAIN)
    bandwidth = 1000e9 * 0.80
    embedding = 32_000 * 4096  # gathered, not streamed
    # Two experts of eight per layer at batch 1: 12.9 B of 46.7 B parameters are read.
    assert one.memory_s * bandwidth / 2 == pytest.approx(arch.active_params, rel=0.01)
    assert arch.active_params == arch.total_params - arch.inactive_params - embedding
    assert many.memory_s * bandwidth / 2 == pytest.approx(arch.total_params - embedding, rel=0.01)


def test_a_chip_without_the_format_is_excluded_with_the_reason(catalog: catalog_mod.Catalog) -> None:
    a100 = catalog.accelerator("A100-SXM4-80GB")
    result = predict_llm_serving(_arch("llama-3.1-8b"), a100, FP8, RequestShape(1000, 300))
    assert not result.fits and "fp8" in result.fit_reason and result.bottleneck == "unsupported-format"
    fp4 = serving_format("fp4")
    assert not predict_llm_serving(
        _arch("llama-3.1-8b"), catalog.accelerator("H100"), fp4, RequestShape(100, 10)
    ).fits
    assert predict_llm_serving(
        _arch("llama-3.1-8b"), catalog.accelerator("B200"), fp4, RequestShape(100, 10)
    ).fits


def test_70b_needs_two_80gb_gpus_in_16_bits(catalog: catalog_mod.Catalog) -> None:
    arch, h100, work = _arch("llama-3.1-70b"), catalog.accelerator("H100-SXM5-80GB"), RequestShape(1000, 300)
    alone = predict_llm_serving(arch, h100, FP16, work)
    assert not alone.fits and "do not fit" in alone.fit_reason
    pair = predict_llm_serving(arch, h100, FP16, work, shape=GroupShape(tensor_parallel=2))
    assert pair.fits and pair.max_concurrent_sequences > 0
    assert pair.breakdown_ms["communication"] > 0


def test_int4_reads_fewer_bytes_so_batch_one_decode_is_faster(catalog: catalog_mod.Catalog) -> None:
    arch, l4 = _arch("llama-3.1-8b"), catalog.accelerator("L4")
    fp16 = predict_llm_serving(arch, l4, FP16, RequestShape(128, 256), batch=1)
    int4 = predict_llm_serving(arch, l4, serving_format("awq"), RequestShape(128, 256), batch=1)
    assert int4.breakdown_ms["memory"] < fp16.breakdown_ms["memory"] / 2
    assert int4.tpot_ms < fp16.tpot_ms


def test_latency_grows_with_load_and_the_ceiling_is_not_sustainable(catalog: catalog_mod.Catalog) -> None:
    arch, chip, work = _arch("llama-3.1-8b"), catalog.accelerator("H100-SXM5-80GB"), RequestShape(1000, 300)
    top = predict_llm_serving(arch, chip, FP16, work)
    assert top.output_tokens_per_second == pytest.approx(top.requests_per_second * 300)
    light = at_rate(arch, chip, FP16, work, 0.1 * top.requests_per_second, ceiling=top)
    heavy = at_rate(arch, chip, FP16, work, 0.9 * top.requests_per_second, ceiling=top)
    assert light.stable and heavy.stable
    assert light.ttft_ms < heavy.ttft_ms and light.tpot_ms < heavy.tpot_ms and light.batch < heavy.batch
    # Little's law: running sequences = rate × time in the system.
    system_s = (top.ttft_ms + 300 * heavy.tpot_mean_ms) / 1e3
    assert heavy.batch == pytest.approx(heavy.requests_per_second * system_s, rel=0.01)
    beyond = at_rate(arch, chip, FP16, work, 1.1 * top.requests_per_second, ceiling=top)
    assert not beyond.stable and math.isinf(beyond.ttft_ms)


def test_static_batch_is_limited_by_the_kv_cache(catalog: catalog_mod.Catalog) -> None:
    arch, chip = _arch("llama-3.1-8b"), catalog.accelerator("L4")
    limit = predict_llm_serving(arch, chip, FP16, RequestShape(2048, 2048)).max_concurrent_sequences
    assert not predict_llm_serving(arch, chip, FP16, RequestShape(2048, 2048), batch=limit + 1).fits
    ok = predict_llm_serving(arch, chip, FP16, RequestShape(2048, 2048), batch=max(limit, 1))
    assert ok.fits and ok.mode == "static-batch"
    assert ok.batch == max(limit, 1)


def test_a_static_batch_prefills_its_prompts_apart_not_as_one_long_prompt() -> None:
    """Sixteen 8k-token prompts cost sixteen 8k prompts' attention, not one 128k prompt's (256x more)."""
    arch, chip = _arch("llama-3.1-8b"), _board(141.0)
    quiet = ServingEfficiency(step_overhead_s_per_layer=0.0)
    one = prefill_time(arch, FP16, chip, GroupShape(), 8192, quiet)
    batched = prefill_time(arch, FP16, chip, GroupShape(), 8192, quiet, sequences=16)
    # Compute-bound at this size: the batch does exactly sixteen prompts' FLOPs (weights read once).
    assert batched.seconds == pytest.approx(16 * one.seconds, rel=0.02)
    as_one_prompt = prefill_time(arch, FP16, chip, GroupShape(), 16 * 8192, quiet)
    assert as_one_prompt.seconds > 2 * batched.seconds
    ttft = predict_llm_serving(arch, chip, FP16, RequestShape(8192, 2), batch=16, efficiency=quiet).ttft_ms
    assert ttft == pytest.approx(batched.seconds * 1e3, rel=1e-9)


def test_pipeline_stages_work_on_micro_batches_at_the_same_time(catalog: catalog_mod.Catalog) -> None:
    arch, chip, work = _arch("llama-3.1-8b"), catalog.accelerator("H100-SXM5-80GB"), RequestShape(1000, 300)
    one = predict_llm_serving(arch, chip, FP16, work)
    staged = predict_llm_serving(arch, chip, FP16, work, shape=GroupShape(pipeline_parallel=2))
    # Two GPUs, each with half the layers and twice the room for KV cache, both busy: more than
    # one GPU's throughput; a sequence's token still passes both stages, so TPOT does not halve.
    assert staged.max_concurrent_sequences > one.max_concurrent_sequences
    assert staged.output_tokens_per_second > 1.5 * one.output_tokens_per_second
    # Alone, a token walks both stages: batch-1 decode is no faster than on one GPU.
    single = predict_llm_serving(arch, chip, FP16, work, batch=1)
    staged_single = predict_llm_serving(
        arch, chip, FP16, work, shape=GroupShape(pipeline_parallel=2), batch=1
    )
    assert staged_single.tpot_ms >= 0.95 * single.tpot_ms
