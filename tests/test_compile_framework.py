"""torch.compile as part of the training framework: the bytes compiled kernels move and keep, its
default per framework, and --compile through predict's JSON."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.llm import TrainingPlan, parse_plan, predict_llm_training
from perdollar.predict.llm.compiled import compiled_adapter_chains, compiled_adapter_saved_bytes_per_token
from perdollar.predict.llm.device import _seconds, micro_batch_times
from perdollar.predict.llm.frameworks import FRAMEWORKS, framework_choice, framework_for
from perdollar.predict.llm.lora import adapter_ops
from perdollar.profile.model import OperatorRecord
from perdollar.workload.llm.architecture import DecoderArchitecture

# hidden 64, 4 layers, 4 heads of 16 with 2 KV heads, gated MLP of 128, vocabulary 1000.
TINY = DecoderArchitecture(
    name="tiny-gqa", model_type="llama", hidden_size=64, num_layers=4, num_attention_heads=4,
    num_key_value_heads=2, head_dim=16, intermediate_size=128, vocab_size=1000, max_position_embeddings=256,
    gated_mlp=True,
)  # fmt: skip
# The adapted matrices' fan-ins (q, k, v, o, gate, up read 64 wide; down 128) and fan-outs
# (q 64, k 32, v 32, o 64, gate 128, up 128, down 64).
FAN_IN, FAN_OUT = 64 * 6 + 128, 64 + 32 + 32 + 64 + 128 + 128 + 64
DISTINCT_INPUTS = 64 + 64 + 64 + 128  # the attention's, o's, the MLP's and down's inputs
# Wide enough that its chains are bound by memory traffic rather than kernel launches or the host.
WIDE = replace(
    TINY, name="wide-gqa", hidden_size=1024, num_attention_heads=16, num_key_value_heads=4, head_dim=64,
    intermediate_size=4096, num_layers=2,
)  # fmt: skip


@pytest.fixture(scope="module")
def h100():  # type: ignore[no-untyped-def]
    return catalog.load().accelerators["H100-SXM5-80GB"]


def test_each_framework_compiles_by_its_own_default() -> None:
    compiled = {name: framework_for(name, "full").compiled for name in FRAMEWORKS}
    assert {name for name, on in compiled.items() if on} == {"torchtitan"}
    assert framework_for("hf", "lora").eager_host and not framework_for("hf+compile", "lora").eager_host
    assert framework_for(framework_choice(None, True), "lora").name == "hf+compile"
    eager_titan = framework_for("torchtitan+eager", "full")
    assert not eager_titan.compiled and not eager_titan.fused_chains and eager_titan.eager_host
    # Hand-written kernels are fused already: compiling changes nothing.
    assert framework_for("megatron+compile", "full") == FRAMEWORKS["megatron"]
    assert framework_for("hf+compile", "lora").loss == "compiled"
    assert framework_for("torchtune+compile", "lora").loss == "chunked"  # chunked already


def test_plan_token_carries_compile() -> None:
    plan = parse_plan("ddp,lora16,mb4,hf+compile")
    assert plan.resolved_framework.compiled and plan.to_dict()["compiled"] is True
    assert parse_plan(plan.token()) == plan
    assert parse_plan("ddp,lora16").to_dict()["compiled"] is False


def test_compiled_adapter_chains_move_eleven_d_plus_four_e() -> None:
    tokens = 100
    chains = compiled_adapter_chains(TINY, tokens, framework_for("hf+compile", "lora"))
    moved = sum(op.bytes_read + op.bytes_written for op in chains)
    assert moved == pytest.approx(tokens * (11 * FAN_IN + 4 * FAN_OUT))
    eager = [op for op in adapter_ops(TINY, tokens, 8, FRAMEWORKS["hf"]) if op.op_class == "elementwise"]
    assert sum(op.bytes_read + op.bytes_written for op in eager) == pytest.approx(
        tokens * (48 * FAN_IN + 14 * FAN_OUT)
    )


def _seconds_per_byte(accelerator) -> float:  # type: ignore[no-untyped-def]
    big = OperatorRecord(name="probe", op_class="elementwise", phase="forward", flops=0.0,
                         bytes_read=5e8, bytes_written=5e8, dtype="bf16")  # fmt: skip
    seconds, _, _ = _seconds((big,), accelerator, 1.0)
    return float(seconds.sum()) / 1e9


def test_compiled_step_saves_at_least_the_adapters_fused_traffic(h100) -> None:  # type: ignore[no-untyped-def]
    shape = {"micro_batch": 16, "seq_len": 1024, "precision": "amp-bf16", "tensor_parallel": 1,
             "finetune": "lora", "lora_rank": 16}  # fmt: skip
    eager = micro_batch_times(WIDE, h100, framework="hf", **shape)  # type: ignore[arg-type]
    compiled = micro_batch_times(WIDE, h100, framework="hf+compile", **shape)  # type: ignore[arg-type]
    tokens = 16 * 1024
    fan_in = 1024 * 6 + 4096
    fan_out = 1024 + 256 + 256 + 1024 + 4096 + 4096 + 1024
    saved_bytes = tokens * ((48 - 11) * fan_in + (14 - 4) * fan_out)  # one layer's adapters
    layer = lambda t: t.layer_forward + t.layer_backward  # noqa: E731
    assert layer(eager) - layer(compiled) >= 0.99 * saved_bytes * _seconds_per_byte(h100)
    # The GEMMs and attention are the same kernels: compiling never removes more than the chains.
    other = lambda t: t.other_forward + t.other_backward  # noqa: E731
    assert 0 < other(compiled) < other(eager)


def test_compiled_step_pays_no_host_time_per_operator(h100) -> None:  # type: ignore[no-untyped-def]
    small = TrainingPlan("ddp", finetune="lora", micro_batch=1)
    eager = predict_llm_training(TINY, h100, gpus_per_node=1, nodes=1, plan=small, seq_len=64, global_batch=1)
    compiled = predict_llm_training(TINY, h100, gpus_per_node=1, nodes=1, seq_len=64, global_batch=1,
                                    plan=replace(small, framework="hf+compile"))  # fmt: skip
    assert compiled.step_time_s < 0.2 * eager.step_time_s


def test_compiled_memory_keeps_each_input_once_and_the_bf16_logits(h100) -> None:  # type: ignore[no-untyped-def]
    narrow = 2.0 * 8 * 7
    compiled_hf = framework_for("hf+compile", "lora")
    assert (
        compiled_adapter_saved_bytes_per_token(TINY, 8, compiled_hf)
        == narrow + 2.0 * DISTINCT_INPUTS + FAN_IN
    )
    plan = TrainingPlan("ddp", finetune="lora", lora_rank=8, micro_batch=2)
    run = {"gpus_per_node": 1, "nodes": 1, "seq_len": 128, "global_batch": 2}
    eager = predict_llm_training(TINY, h100, plan=plan, **run)  # type: ignore[arg-type]
    compiled = predict_llm_training(TINY, h100, plan=replace(plan, framework="hf+compile"), **run)  # type: ignore[arg-type]
    # Per token: each layer's adapters keep their inputs once (2 bytes × the inputs shared), and the
    # loss 6 bytes fewer per logit (the upcast's 10 against the fused cross-entropy's 4).
    per_token = TINY.num_layers * 2.0 * (FAN_IN - DISTINCT_INPUTS) + 6.0 * TINY.vocab_size
    drop = eager.memory_gib["activations"] - compiled.memory_gib["activations"]
    assert drop * 2**30 == pytest.approx(2 * 128 * per_token)


def test_compile_reaches_predicts_json() -> None:
    base = ["predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--finetune", "lora", "--plan", "ddp",
            "--micro-batch", "2", "--seq-len", "2048", "--json"]  # fmt: skip
    answers = {}
    for flag in ("--compile", "--no-compile"):
        done = run_perdollar(*base, flag)
        assert done.returncode == 0, done.stderr
        answers[flag] = json.loads(done.stdout)
    compiled, eager = answers["--compile"], answers["--no-compile"]
    assert compiled["compiled"] is True and compiled["plan"]["token"].endswith("hf+compile")
    assert "torch.compile" in compiled["plan_text"]
    assert eager["compiled"] is False and eager["framework"] == "hf"
    assert compiled["step_time_s"] < eager["step_time_s"]
    assert compiled["memory_per_gpu_gib"] < eager["memory_per_gpu_gib"]
