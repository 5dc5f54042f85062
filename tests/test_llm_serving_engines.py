"""Serving engines: their defaults reach the model, the KV cache's precision is its own, the host
time is paid once a step, and a measured endpoint moves only its own engine's predictions."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.errors import PerdollarError
from perdollar.predict.accelerator_stacks import SERVING_STACKS
from perdollar.predict.llm_serving.calibrate import EndpointReading, _cases, calibrate
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.engines import ENGINES, engine_choices, predict_with_engine
from perdollar.predict.llm_serving.formats import serving_format, with_kv_precision
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.predict.llm_serving.load import RequestShape
from perdollar.predict.llm_serving.published import predict_case
from perdollar.predict.llm_serving.timing import (
    GIB,
    GroupShape,
    decode_step_time,
    kv_bytes_per_token_per_gpu,
    max_concurrent_sequences,
)
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import from_hf_config

LLAMA_8B = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}  # fmt: skip


@pytest.fixture(scope="module")
def catalog() -> catalog_mod.Catalog:
    return catalog_mod.load()


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_each_engines_defaults_reach_the_prediction(name: str, catalog: catalog_mod.Catalog) -> None:
    engine = ENGINES[name]
    arch = from_hf_config(LLAMA_8B, name="llama-8b")
    chip = catalog.accelerator("H100-SXM5-80GB")
    fmt = serving_format("fp8" if engine.formats is None or "fp8" in engine.formats else "int4")
    result = predict_with_engine(arch, chip, fmt, RequestShape(200, 100), engine=name)
    assert result.engine == name and result.fits
    # The engine's cap on running sequences binds: short requests leave room for thousands.
    assert result.max_concurrent_sequences > engine.max_running
    assert result.batch == engine.max_running
    # The cache gets the engine's share of memory, less the reserve and the weights.
    weights = result.weights_gib_per_gpu
    assert result.kv_cache_gib == pytest.approx(chip.memory_gib * engine.memory_utilisation - 1.0 - weights)
    # vLLM's "auto" keeps a 16-bit cache under fp8 weights; TensorRT-LLM's fp8 recipe quantises it.
    assert result.kv_precision == {"auto": "fp16", "format": "fp8", "fp16": "fp16"}[engine.kv_precision]


def test_fp8_kv_cache_holds_twice_the_sequences_of_bf16(catalog: catalog_mod.Catalog) -> None:
    arch = from_hf_config(LLAMA_8B, name="llama-8b")
    chip = catalog.accelerator("H100-SXM5-80GB")
    bf16 = serving_format("bf16")
    fp8_cache = with_kv_precision(bf16, "fp8")
    # By hand: 32 layers × (key + value) × 8 KV heads × 128 dims, 2 bytes each in bf16, 1 in fp8.
    assert kv_bytes_per_token_per_gpu(arch, bf16, GroupShape()) == 32 * 2 * 8 * 128 * 2 == 131_072
    assert kv_bytes_per_token_per_gpu(arch, fp8_cache, GroupShape()) == 65_536
    eff = ServingEfficiency(memory_utilisation=0.9, reserve_gib=1.0)
    weight_bytes = (arch.total_params - arch.embedding_params - arch.lm_head_params) * 2.0 + (
        arch.embedding_params + arch.lm_head_params
    ) * 2.0
    free = chip.memory_gib * GIB * 0.9 - GIB - weight_bytes
    tokens = 2048  # a whole number of 16-token blocks
    expected_bf16 = int(free // (tokens * 131_072))
    expected_fp8 = int(free // (tokens * 65_536))
    assert max_concurrent_sequences(arch, bf16, chip, GroupShape(), tokens, eff) == expected_bf16
    assert max_concurrent_sequences(arch, fp8_cache, chip, GroupShape(), tokens, eff) == expected_fp8
    assert expected_fp8 in (2 * expected_bf16, 2 * expected_bf16 + 1)


def test_the_host_time_of_a_step_does_not_grow_with_the_layers(catalog: catalog_mod.Catalog) -> None:
    chip = catalog.accelerator("H100-SXM5-80GB")
    fmt = serving_format("bf16")
    shallow = from_hf_config(LLAMA_8B, name="shallow")
    deep = from_hf_config({**LLAMA_8B, "num_hidden_layers": 96}, name="deep")
    engine = ENGINES["vllm"]
    with_host = engine.step_efficiency()
    without_host = replace(with_host, step_overhead_s=0.0)
    for arch in (shallow, deep):
        step = decode_step_time(arch, fmt, chip, GroupShape(), 1, 512, with_host)
        bare = decode_step_time(arch, fmt, chip, GroupShape(), 1, 512, without_host)
        assert step.overhead_s == pytest.approx(engine.host_step_s)
        assert step.seconds - bare.seconds == pytest.approx(engine.host_step_s)
    # Launching kernels one by one (CUDA graphs off) costs a layer at a time instead.
    eager = engine.step_efficiency(cuda_graphs=False)
    shallow_eager = decode_step_time(shallow, fmt, chip, GroupShape(), 1, 512, eager).overhead_s
    deep_eager = decode_step_time(deep, fmt, chip, GroupShape(), 1, 512, eager).overhead_s
    assert deep_eager - shallow_eager == pytest.approx(64 * engine.eager_launch_s_per_layer)


def test_a_measured_endpoint_moves_its_engine_elsewhere_and_not_another(catalog: catalog_mod.Catalog) -> None:
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    chips = {key: catalog.accelerators[key] for key in ("L4", "H100-SXM5-80GB")}
    vllm = ENGINES["vllm"].step_efficiency()
    probe = EndpointReading("L4", 1, "fp16", 256, 128, tpot_ms=1.0, ttft_ms=1.0, engine="vllm")
    decode, first = _cases(probe, arch)
    predicted_tpot_ms = 1e3 / (predict_case(decode, chips["L4"], vllm) or 1.0)
    predicted_ttft_ms = predict_case(first, chips["L4"], vllm) or 1.0
    slow = replace(probe, tpot_ms=1.5 * predicted_tpot_ms, ttft_ms=predicted_ttft_ms)
    calibration = calibrate([slow], arch, chips, vllm, engine="vllm")
    assert calibration is not None and calibration.engine == "vllm"
    h100 = {key: value for key, value in catalog.instance_types.items() if value.accelerator_key == chips[
        "H100-SXM5-80GB"].key and value.accelerator_count == 8}  # fmt: skip
    only = replace(catalog, instance_types=dict(list(h100.items())[:1]))

    def tpot_ms(engine: str, calibrated: bool) -> float:
        """A light load's time per output token: the decode steps the endpoint measured."""
        frame = llm_serving_frame(
            arch, only, input_tokens=256, output_tokens=128, rps=1.0, precisions=("fp16",),
            tensor_parallel_options=(1,), engine=engine,
            efficiency=calibration.efficiency if calibrated else None,
            calibrated_engine=calibration.engine if calibrated else None,
        )  # fmt: skip
        assert set(frame["engine"]) == {engine}
        return float(frame["tpot_p99_ms"].iloc[0])

    assert tpot_ms("vllm", calibrated=True) > 1.2 * tpot_ms("vllm", calibrated=False)
    assert tpot_ms("sglang", calibrated=True) == tpot_ms("sglang", calibrated=False)


def test_an_engine_without_kernels_for_a_format_is_refused_and_any_passes_it_by(
    catalog: catalog_mod.Catalog,
) -> None:
    arch = from_hf_config(LLAMA_8B, name="llama-8b")
    chip = catalog.accelerator("H100-SXM5-80GB")
    fp8 = serving_format("fp8")
    refused = predict_with_engine(arch, chip, fp8, RequestShape(200, 100), engine="llama.cpp")
    assert not refused.fits and "no fp8 kernels" in refused.fit_reason
    best = predict_with_engine(arch, chip, fp8, RequestShape(200, 100), engine="any")
    assert best.fits and best.engine != "llama.cpp"
    served = [predict_with_engine(arch, chip, fp8, RequestShape(200, 100), engine=name) for name in ENGINES]
    assert best.output_tokens_per_second == max(p.output_tokens_per_second for p in served if p.fits)


def test_any_engine_tries_every_engine_and_a_mistyped_one_names_the_choices() -> None:
    assert {e.name for e in engine_choices("any")} == set(ENGINES)
    assert [e.name for e in engine_choices(None)] == ["vllm"]
    with pytest.raises(PerdollarError, match="unknown serving engine"):
        engine_choices("vlm")
    with pytest.raises(PerdollarError, match="KV-cache precision"):
        with_kv_precision(serving_format("fp16"), "int3")


def test_predict_inference_names_the_engine_and_kv_precision() -> None:
    done = run_perdollar("predict", "llama-3.1-8b", "--inference", "--accelerator", "H100", "--input-tokens",
                         "1000", "--output-tokens", "300", "--precision", "fp8", "--engine", "sglang",
                         "--kv-precision", "fp8", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (document["engine"], document["kv_precision"]) == ("sglang", "fp8")
    assert math.isfinite(document["tpot_ms"])
    wrong = run_perdollar("predict", "llama-3.1-8b", "--inference", "--accelerator", "H100", "--input-tokens",
                          "1000", "--output-tokens", "300", "--kv-precision", "int3")  # fmt: skip
    assert wrong.returncode != 0 and "KV-cache precision" in wrong.stderr
    assert len(wrong.stderr.strip().splitlines()) == 1


def test_recommend_inference_names_each_rows_engine_and_kv_precision() -> None:
    done = run_perdollar("recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--no-store", "--json",
                         "--engine", "any", "--top", "5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    rows = document["deployments"]
    # GPU rows name a GPU engine; Trainium, Inferentia and TPU rows their own stack's.
    stacks = {stack.name for stack in SERVING_STACKS.values()}
    assert rows and all(row["engine"] in ENGINES or row["engine"] in stacks for row in rows)
    assert all(row["kv_precision"] in ("fp16", "bf16", "fp8") for row in rows)
    assert any("the best of" in note for note in document["notes"])
    # With every engine allowed, the explanation prices each engine's best deployment against the cheapest.
    worth = [line for line in document["explanation"].splitlines() if "by engine" in line]
    engines = {row["engine"] for row in rows}
    assert len(engines) == 1 or (worth and all(name in worth[0] for name in engines))


def test_an_amd_chip_runs_at_the_rocm_share_of_its_datasheet(catalog: catalog_mod.Catalog) -> None:
    from perdollar.predict.params import ModelParams

    amd = catalog.accelerator("MI300X")
    assert amd.software_stack == "rocm"
    as_if_cuda = replace(amd, software_stack="cuda")
    arch, fmt, engine = from_hf_config(LLAMA_8B, name="llama"), serving_format("bf16"), ENGINES["vllm"]
    share = ModelParams().rocm_efficiency
    for batch in (1, 256):  # weight streaming, then compute
        on_rocm = decode_step_time(arch, fmt, amd, GroupShape(), batch, 2048, engine.step_efficiency())
        on_cuda = decode_step_time(arch, fmt, as_if_cuda, GroupShape(), batch, 2048, engine.step_efficiency())
        assert on_rocm.memory_s == pytest.approx(on_cuda.memory_s / share)
        assert on_rocm.compute_s == pytest.approx(on_cuda.compute_s / share)
        assert on_rocm.overhead_s == pytest.approx(on_cuda.overhead_s)  # the host's time is its own
