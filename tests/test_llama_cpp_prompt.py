"""llama.cpp's prompt processing: micro-batches pipelined over layer-split GPUs, unfused attention's
scores streamed through memory, and fp16-accumulate products on GeForce cards."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving import GroupShape, prefill_time, serving_format
from perdollar.predict.llm_serving.efficiency import ENGINE_EFFICIENCY, FIT_START, fit_start
from perdollar.predict.llm_serving.rates import flops_rate, streaming_bandwidth
from perdollar.predict.llm_serving.timing import prompt_pipeline_share
from perdollar.workload.llm.architecture import from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
LLAMA_CPP = ENGINE_EFFICIENCY["llama.cpp"]
FP16 = serving_format("fp16")


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


def _llama_8b():
    return from_hf_config(load_config_file(CONFIGS / "llama-3.1-8b.json"), name="llama-3.1-8b")


def test_micro_batches_pipeline_over_layer_split_gpus() -> None:
    # 4096 tokens: two batches of 2048, four 512-token micro-batches each; four stages pass each
    # batch on in 4 + 4 - 1 = 7 micro-batch steps of one stage instead of 16.
    assert prompt_pipeline_share(4096, 4, LLAMA_CPP) == pytest.approx(2 * 7 / (8 * 4))
    assert prompt_pipeline_share(1024, 4, LLAMA_CPP) == pytest.approx(5 / 8)
    # One micro-batch, or one GPU, has nothing to overlap; an engine without micro-batches neither.
    assert prompt_pipeline_share(512, 4, LLAMA_CPP) == 1.0
    assert prompt_pipeline_share(4096, 1, LLAMA_CPP) == 1.0
    assert prompt_pipeline_share(4096, 4, ENGINE_EFFICIENCY["tensorrt-llm"]) == 1.0


def test_a_long_prompt_runs_faster_on_four_layer_split_gpus(catalog: catalog_mod.Catalog) -> None:
    arch, chip = _llama_8b(), catalog.accelerator("RTX-3090")
    one = prefill_time(arch, FP16, chip, GroupShape(), 4096, LLAMA_CPP).seconds
    four = prefill_time(arch, FP16, chip, GroupShape(pipeline_parallel=4), 4096, LLAMA_CPP).seconds
    short_one = prefill_time(arch, FP16, chip, GroupShape(), 512, LLAMA_CPP).seconds
    short_four = prefill_time(arch, FP16, chip, GroupShape(pipeline_parallel=4), 512, LLAMA_CPP).seconds
    assert four < 0.5 * one  # stage after stage, four GPUs took as long as one
    assert short_four == pytest.approx(short_one, rel=0.05)


def test_unfused_attention_streams_twenty_bytes_a_score(catalog: catalog_mod.Catalog) -> None:
    arch, chip = _llama_8b(), catalog.accelerator("A100-SXM4-80GB")
    fused = replace(LLAMA_CPP, score_bytes_per_element=0.0)
    tokens = 8192
    extra = (
        prefill_time(arch, FP16, chip, GroupShape(), tokens, LLAMA_CPP).seconds
        - prefill_time(arch, FP16, chip, GroupShape(), tokens, fused).seconds
    )
    scores = arch.num_layers * arch.num_attention_heads * tokens**2 / 2
    assert extra == pytest.approx(scores * 20.0 / streaming_bandwidth(chip, LLAMA_CPP))
    assert extra > 0.2  # a third of a second of scores on an 8k prompt: no rounding term


def test_fp16_accumulate_doubles_geforce_rate_only(catalog: catalog_mod.Catalog) -> None:
    geforce, workstation = catalog.accelerator("RTX-3090"), catalog.accelerator("RTX-A6000")
    fp32_accumulate = replace(LLAMA_CPP, fp16_accumulate=False)
    doubled = 2 * flops_rate(geforce, FP16, fp32_accumulate)
    assert flops_rate(geforce, FP16, LLAMA_CPP) == pytest.approx(doubled)
    assert flops_rate(workstation, FP16, LLAMA_CPP) == flops_rate(workstation, FP16, fp32_accumulate)
    # An engine accumulating in fp32 (every other one) keeps the catalog's GeForce rate.
    assert math.isclose(flops_rate(geforce, FP16, FIT_START), 71e12 * FIT_START.compute)


def test_llama_cpp_fits_start_from_its_prompt_kernels() -> None:
    start = fit_start("llama.cpp")
    assert (start.prompt_ubatch_tokens, start.prompt_batch_tokens) == (512, 2048)
    assert start.score_bytes_per_element == 20.0 and start.fp16_accumulate
    assert (start.compute, start.bandwidth) == (FIT_START.compute, FIT_START.bandwidth)
    assert fit_start("vllm") is FIT_START
