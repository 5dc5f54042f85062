"""`perdollar predict CONFIG.json --inference` through the real command line."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run_perdollar
from perdollar.predict.llm_serving.engines import ENGINES

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"


def _predict(*args: str) -> dict:
    done = run_perdollar("predict", *args, "--json", columns=200)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_contract_fields_from_a_config_file() -> None:
    out = _predict(
        str(CONFIGS / "llama-3.1-8b.json"), "--inference", "--accelerator", "h100", "--gpus", "2",
        "--tensor-parallel", "1", "--input-tokens", "1000", "--output-tokens", "300", "--precision", "fp8",
    )  # fmt: skip
    for key in ("output_tokens_per_second", "ttft_ms", "tpot_ms", "max_concurrent_sequences", "kv_cache_gib"):
        assert out[key] > 0, key
    assert out["fits"] is True and out["basis"] == "spec" and out["bottleneck"]
    assert out["accelerator"] == "H100-SXM5-80GB" and out["replicas"] == 2
    assert out["band"]["low"] < out["output_tokens_per_second"] < out["band"]["high"]
    # vLLM (the default engine) keeps its cache in the model's 16-bit dtype under fp8 weights
    # (kv_cache_dtype auto): 32 layers × 8 heads × 128 × 2 × 2 bytes = 128 KiB a token.
    assert (out["engine"], out["kv_precision"]) == ("vllm", "fp16")
    per_sequence_gib = 1312 * 131_072 / 1024**3  # 1,300 tokens in 82 blocks of 16
    assert out["max_concurrent_sequences"] == 2 * int(out["kv_cache_gib"] // per_sequence_gib)
    alone = _predict(
        "llama-3.1-8b", "--inference", "--accelerator", "h100", "--gpus", "1",
        "--input-tokens", "1000", "--output-tokens", "300", "--precision", "fp8",
    )  # fmt: skip
    assert out["output_tokens_per_second"] == 2 * alone["output_tokens_per_second"]


def test_batch_one_decode_is_the_weights_read_at_the_bandwidth() -> None:
    out = _predict(
        "llama-3.1-8b", "--inference", "--accelerator", "L4", "--gpus", "1", "--input-tokens", "128",
        "--output-tokens", "128", "--precision", "fp16", "--batch", "1",
    )  # fmt: skip
    assert out["mode"] == "static-batch" and out["bottleneck"] == "memory-bandwidth"
    # (8,030,261,248 − 128,256 × 4,096 embedding) × 2 bytes read at the default engine's (vLLM's)
    # share of the L4's 300 GB/s, plus its host time a step; the KV cache adds about 0.2%.
    eff = ENGINES["vllm"].step_efficiency()
    expected_ms = 1e3 * (15_009_849_344 / (300e9 * eff.bandwidth) + eff.step_overhead_s)
    assert expected_ms < out["tpot_ms"] < expected_ms * 1.01


def test_70b_on_one_80gb_gpu_does_not_fit_and_says_why() -> None:
    out = _predict(
        "llama-3.1-70b", "--inference", "--accelerator", "H100-SXM5-80GB", "--gpus", "1",
        "--input-tokens", "1000", "--output-tokens", "300", "--precision", "fp16",
    )  # fmt: skip
    assert out["fits"] is False and "do not fit" in out["fit_reason"]
    two = _predict(
        "llama-3.1-70b", "--inference", "--accelerator", "H100-SXM5-80GB", "--gpus", "2",
        "--tensor-parallel", "2", "--input-tokens", "1000", "--output-tokens", "300", "--precision", "fp16",
    )  # fmt: skip
    assert two["fits"] is True and two["breakdown_ms"]["communication"] > 0


def test_a_quantized_checkpoint_is_served_in_its_own_format_unless_told(tmp_path: Path) -> None:
    # gpt-oss-120b is published with MXFP4 experts (its config's quantization_config): about 61 GiB,
    # which one 80 GB GPU holds; the same weights in fp16 would take 218 GiB.
    shape = ("--inference", "--accelerator", "H100", "--gpus", "1", "--input-tokens", "1000")
    shape += ("--output-tokens", "300")
    published = _predict("gpt-oss-120b", *shape)
    assert (published["precision"], published["fits"]) == ("mxfp4", True)
    assert _predict("gpt-oss-120b", *shape, "--precision", "fp16")["fits"] is False
    # A config without a quantization_config is a 16-bit checkpoint, served in fp16.
    config = json.loads((CONFIGS / "gpt-oss-120b.json").read_text())
    del config["quantization_config"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert _predict(str(tmp_path / "config.json"), *shape)["precision"] == "fp16"


def test_bad_input_is_one_line_and_exit_two(tmp_path: Path) -> None:
    odd = run_perdollar(
        "predict", "llama-3.1-8b", "--inference", "--accelerator", "a100", "--gpus", "3",
        "--tensor-parallel", "2", "--input-tokens", "10", "--output-tokens", "10", columns=200,
    )  # fmt: skip
    assert odd.returncode == 2 and odd.stderr.count("\n") == 1 and "do not divide" in odd.stderr
    unknown = run_perdollar(
        "predict", "llama-3.1-8b", "--inference", "--accelerator", "nosuchgpu", "--input-tokens", "10",
        "--output-tokens", "10", columns=200,
    )  # fmt: skip
    assert unknown.returncode == 2 and "unknown accelerator" in unknown.stderr
    broken = tmp_path / "config.json"
    broken.write_text("{not json")
    bad = run_perdollar(
        "predict",
        str(broken),
        "--inference",
        "--accelerator",
        "L4",
        "--input-tokens",
        "1",
        "--output-tokens",
        "1",
        columns=200,
    )
    assert bad.returncode == 2 and "is not JSON" in bad.stderr and "Traceback" not in bad.stderr
