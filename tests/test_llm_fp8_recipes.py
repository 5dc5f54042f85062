"""FP8 training as each framework runs it: the recipe's quantising against hand counts, what it
costs a step, and where FP8 cannot run."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar.catalog import load as load_catalog
from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm import TrainingPlan, predict_llm_training
from perdollar.predict.llm.fp8_recipes import RECIPES, cast_bytes, recipe_for, recipe_problem
from perdollar.predict.llm.step import FP8_QUANTISE, LLMTrainingPrediction
from perdollar.workload.llm import from_hf_config, load_llm_workload

# hidden 64, 4 heads of 16 (query 64 wide), 2 key/value heads (32 wide), gated MLP 128 wide.
SMALL = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 256}  # fmt: skip
# q 64·64, k and v 64·32, o 64·64, gate and up 64·128, down 128·64
WEIGHTS = 64 * 64 + 2 * 64 * 32 + 64 * 64 + 2 * 64 * 128 + 128 * 64


def chip(key: str) -> Accelerator:
    return load_catalog().accelerator(key)


def test_transformer_engine_on_hopper_matches_a_hand_count() -> None:
    """Each tensor written twice (the TN layout's transposed copy); the norm-fed inputs, the
    activation's output and its gradient quantised by the kernel making them; q, k, v and gate, up
    each one linear quantising its input once; weights once over the step's 4 micro-batches."""
    arch = from_hf_config(SMALL, name="small")
    tokens = 10
    moved = cast_bytes(RECIPES["te-delayed"], arch, chip("H100-SXM5-80GB"), tokens, 1, micro_batches=4)
    # inputs: qkv (fused, 2 B), o (4 B), gate+up (fused, 2 B), down (fused, 128 wide, 2 B)
    assert moved["input"] == pytest.approx(tokens * (2 * 64 + 4 * 64 + 2 * 64 + 2 * 128))
    # output gradients: q, k, v and o cast and transposed (4 B); gate, up by the activation's backward
    assert moved["grad_output"] == pytest.approx(tokens * (4 * (64 + 32 + 32 + 64) + 2 * 2 * 128 + 4 * 64))
    assert moved["weight"] == pytest.approx(4 * WEIGHTS / 4)


def test_torchao_tensorwise_casts_every_linear_and_every_weight_each_micro_batch() -> None:
    """torchao's roofline: 4 B per element of an input or gradient (its amax fused with the kernel
    before, compiled), 8 B per weight element (its amax, and a kernel per layout)."""
    arch = from_hf_config(SMALL, name="small")
    moved = cast_bytes(RECIPES["torchao-tensorwise"], arch, chip("H100-SXM5-80GB"), 10, 2, micro_batches=4)
    inputs = 3 * 64 + 64 + 2 * 64 + 128  # each of q, k, v, gate, up casts the same input again
    gradients = 64 + 32 + 32 + 64 + 2 * 128 + 64
    assert moved["input"] == pytest.approx(4 * 10 * inputs / 2)
    assert moved["grad_output"] == pytest.approx(4 * 10 * gradients / 2)
    assert moved["weight"] == pytest.approx(8 * WEIGHTS / 2)


def test_blackwell_needs_no_transposed_copy_but_block_scaling_writes_both_layouts_with_scales() -> None:
    arch = from_hf_config(SMALL, name="small")
    b200, h100 = chip("B200"), chip("H100-SXM5-80GB")
    per_tensor = cast_bytes(RECIPES["te-delayed"], arch, b200, 10, 1)
    hopper = cast_bytes(RECIPES["te-delayed"], arch, h100, 10, 1)
    block = cast_bytes(RECIPES["te-mxfp8"], arch, b200, 10, 1)
    # o's input: read 2 B and written once (3 B) on Blackwell, twice (4 B) on Hopper
    assert hopper["input"] - per_tensor["input"] == pytest.approx(10 * (64 + 64 + 64 + 128))
    # MXFP8: the two layouts of Hopper's count, each with a scale byte per 32 elements
    assert block["input"] == pytest.approx(hopper["input"] + 2 * 10 * (64 + 64 + 64 + 128) / 32)
    assert recipe_for("megatron", b200).name == "te-mxfp8"
    assert recipe_for("megatron", h100).name == "te-delayed"
    assert "Blackwell" in recipe_problem(RECIPES["te-mxfp8"], h100)


def _llama_8b(
    precision: str, accelerator: str = "H100-SXM5-80GB", framework: str = "megatron", global_batch: int = 32
) -> LLMTrainingPrediction:
    plan = TrainingPlan(strategy="zero1", micro_batch=2, framework=framework)
    return predict_llm_training(
        load_llm_workload("llama-3.1-8b").architecture, chip(accelerator), gpus_per_node=8, nodes=1,
        plan=plan, seq_len=4096, global_batch=global_batch, precision=precision,
    )  # fmt: skip


def test_fp8_trains_an_8b_model_faster_than_bf16_on_h100_and_says_what_ran_in_fp8() -> None:
    fp8, bf16 = _llama_8b("fp8"), _llama_8b("amp-bf16")
    assert 1.2 < fp8.tokens_per_second / bf16.tokens_per_second < 1.6
    quantise = fp8.breakdown_s[FP8_QUANTISE]
    assert 0.01 < quantise / fp8.step_time_s < 0.15
    assert fp8.fp8["recipe"] == "te-delayed" and fp8.fp8["quantise_s_per_step"] == quantise
    assert any("MLP down" in gemm for gemm in fp8.fp8["fp8_gemms"])
    assert "LM head and loss" in fp8.fp8["bf16"]
    assert not bf16.fp8 and FP8_QUANTISE not in bf16.breakdown_s


def test_cached_weights_cost_less_over_more_micro_batches_and_torchao_recasts_them() -> None:
    def share(framework: str, batch: int) -> float:
        p = _llama_8b("fp8", framework=framework, global_batch=batch)
        return p.breakdown_s[FP8_QUANTISE] / (batch // 16)

    assert share("megatron", 256) < 0.97 * share("megatron", 32)  # per micro-batch, weights amortised
    assert share("torchtitan", 256) == pytest.approx(share("torchtitan", 32), rel=1e-6)
    assert _llama_8b("fp8", framework="torchtitan").fp8["recipe"] == "torchao-tensorwise"


def test_a_chip_without_fp8_refuses_fp8_training_naming_why() -> None:
    with pytest.raises(PerdollarError, match="no FP8 tensor cores"):
        _llama_8b("fp8", accelerator="A100-SXM4-80GB")


def test_predict_json_names_the_recipe_and_the_cast_cost() -> None:
    asked = ("predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--precision", "fp8", "--json")
    done = run_perdollar(*asked)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["fp8"]["recipe"] == "te-delayed"
    assert answer["breakdown_s"][FP8_QUANTISE] > 0
    refused = run_perdollar("predict", "llama-3.1-8b", "--instance", "p4d.24xlarge", "--precision", "fp8")
    assert refused.returncode == 2 and "no FP8 tensor cores" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
