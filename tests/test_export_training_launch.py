"""`perdollar export --format torchrun|skypilot`: a language model's plan as a launch on each node."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar.launch.torchrun import fsdp_settings, plan_environment, torchrun_command
from perdollar.predict.llm.memory import state_bytes_per_param


def test_the_planners_choice_reaches_the_script_as_variables_and_the_torchrun_shape() -> None:
    done = run_perdollar("export", "2x p5.48xlarge spot", "--format", "torchrun", "--workload",
                         "llama-3.1-8b", "--json", columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    launch = json.loads(done.stdout)
    predicted = json.loads(
        run_perdollar("predict", "llama-3.1-8b", "--instance", "p5.48xlarge", "--nodes", "2", "--json").stdout
    )
    assert launch["plan"] == predicted["plan"]  # the same plan predict chose for the same machines
    assert launch["environment"]["PERDOLLAR_PLAN"] == predicted["plan"]["token"]
    assert launch["nodes"] == 2 and launch["gpus_per_node"] == 8
    assert launch["command"].startswith("torchrun --nproc-per-node=8 --nnodes=2")
    assert launch["script"].splitlines()[-1] == launch["command"]


def test_a_fixed_plan_is_kept_and_a_plan_that_does_not_fit_is_refused() -> None:
    fixed = run_perdollar("export", "p5.48xlarge", "--format", "torchrun", "--workload", "llama-3.1-8b",
                          "--plan", "fsdp+ac,mb4", "--json", columns=200)  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr[-1500:]
    launch = json.loads(fixed.stdout)
    assert launch["environment"]["PERDOLLAR_SHARDING"] == "FULL_SHARD"
    assert launch["environment"]["PERDOLLAR_ACTIVATION_CHECKPOINTING"] == "1"
    assert launch["environment"]["PERDOLLAR_MICRO_BATCH"] == "4"
    assert "--standalone" in launch["command"]
    assert launch["environment"]["PERDOLLAR_BACKWARD_PREFETCH"] == "BACKWARD_PRE"
    assert launch["environment"]["PERDOLLAR_TENSOR_PARALLEL_COMM"] == "overlapped"
    composer = run_perdollar("export", "2x p5.48xlarge", "--format", "torchrun", "--workload", "llama-3.1-8b",
                             "--plan", "fsdp+ac+backward-post,tp2-blocking,mb4", "--json",
                             columns=200)  # fmt: skip
    assert composer.returncode == 0, composer.stderr[-1500:]
    environment = json.loads(composer.stdout)["environment"]
    assert environment["PERDOLLAR_BACKWARD_PREFETCH"] == "BACKWARD_POST"
    assert environment["PERDOLLAR_TENSOR_PARALLEL_COMM"] == "blocking"
    assert environment["PERDOLLAR_PLAN"].startswith("fsdp+ac+backward-post,tp2-blocking")
    assert environment["PERDOLLAR_DATA_PARALLEL_COMM"] == "overlapped"
    megatron = run_perdollar("export", "2x p5.48xlarge", "--format", "torchrun", "--workload", "llama-3.1-8b",
                             "--plan", "zero1+ac+blocking,tp2,mb4", "--json", columns=200)  # fmt: skip
    assert megatron.returncode == 0, megatron.stderr[-1500:]
    environment = json.loads(megatron.stdout)["environment"]
    assert environment["PERDOLLAR_DATA_PARALLEL_COMM"] == "blocking"
    assert environment["PERDOLLAR_PLAN"].startswith("zero1+ac+blocking,tp2")
    too_big = run_perdollar("export", "g5.xlarge", "--format", "torchrun", "--workload", "llama-3.1-70b",
                            "--plan", "ddp", columns=200)  # fmt: skip
    assert too_big.returncode == 2 and "does not fit" in too_big.stderr
    unnamed = run_perdollar("export", "g5.xlarge", "--format", "skypilot", columns=200)
    assert unnamed.returncode == 2 and "--workload" in unnamed.stderr


STRATEGIES = [
    ("ddp", "NO_SHARD"),
    ("zero1", "NO_SHARD"),
    ("zero2", "SHARD_GRAD_OP"),
    ("fsdp", "FULL_SHARD"),
    ("hsdp", "HYBRID_SHARD"),
]


@pytest.mark.parametrize(("strategy", "sharding"), STRATEGIES)
def test_each_strategy_names_its_fsdp_sharding(strategy: str, sharding: str) -> None:
    plan = {"token": strategy, "strategy": strategy, "tensor_parallel": 1, "pipeline_parallel": 1,
            "micro_batch": 1, "gradient_accumulation": 1, "activation_checkpointing": False,
            "cpu_offload": False}  # fmt: skip
    environment = plan_environment(plan, seq_len=2048, global_batch=8, precision="amp-bf16")
    assert environment["PERDOLLAR_SHARDING"] == sharding


# What a script can act on: each variable names one concept and holds one value of it.
SWITCHES = {
    "PERDOLLAR_ZERO_REDUNDANCY_OPTIMIZER", "PERDOLLAR_ACTIVATION_CHECKPOINTING",
    "PERDOLLAR_SELECTIVE_CHECKPOINTING", "PERDOLLAR_CPU_OFFLOAD", "PERDOLLAR_OPTIMIZER_IN_BACKWARD",
}  # fmt: skip
COUNTS = {
    "PERDOLLAR_TENSOR_PARALLEL", "PERDOLLAR_PIPELINE_PARALLEL", "PERDOLLAR_VIRTUAL_STAGES",
    "PERDOLLAR_CONTEXT_PARALLEL", "PERDOLLAR_EXPERT_PARALLEL", "PERDOLLAR_MICRO_BATCH",
    "PERDOLLAR_GRADIENT_ACCUMULATION", "PERDOLLAR_GLOBAL_BATCH", "PERDOLLAR_SEQ_LEN", "PERDOLLAR_LORA_RANK",
}  # fmt: skip


@pytest.mark.parametrize("plan", ["zero1", "ddp+ac+blocking,tp8", "zero2+ac", "fsdp+sac,tp2", "hsdp+offload"])
def test_every_exported_variable_holds_a_value_the_launcher_accepts(plan: str) -> None:
    from torch.distributed.fsdp import BackwardPrefetch, ShardingStrategy

    done = run_perdollar("export", "2x p5.48xlarge", "--format", "torchrun", "--workload", "llama-3.1-8b",
                         "--plan", plan, "--json", columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr[-1500:]
    launch = json.loads(done.stdout)
    environment = launch["environment"]
    assert environment["PERDOLLAR_SHARDING"] in ShardingStrategy.__members__
    assert launch["fsdp"]["sharding_strategy"] == environment["PERDOLLAR_SHARDING"]
    assert environment["PERDOLLAR_BACKWARD_PREFETCH"] in BackwardPrefetch.__members__
    for name in SWITCHES:
        assert environment[name] in ("0", "1"), name
    for name in COUNTS & environment.keys():
        assert environment[name].isdigit() and int(environment[name]) >= 1, name
    zero1 = plan.startswith("zero1")
    assert environment["PERDOLLAR_ZERO_REDUNDANCY_OPTIMIZER"] == ("1" if zero1 else "0")
    assert launch["fsdp"]["zero_redundancy_optimizer"] is zero1


def test_a_script_name_with_spaces_stays_one_argument() -> None:
    line = torchrun_command("my train.py", ["--lr", "1e-4; rm -rf /"], nodes=1, gpus_per_node=4)
    assert line.endswith("'my train.py' --lr '1e-4; rm -rf /'")


@pytest.mark.parametrize("precision", ["amp-bf16", "amp-fp16", "bf16"])
def test_the_exported_fsdp_reduces_gradients_in_the_bytes_the_prediction_prices(precision: str) -> None:
    plan = {"token": "fsdp", "strategy": "fsdp", "cpu_offload": False, "activation_checkpointing": False}
    settings = fsdp_settings(plan, precision)["mixed_precision"]
    width = {"bfloat16": 2.0, "float16": 2.0, "float32": 4.0}
    _, gradient_bytes, _ = state_bytes_per_param(precision)
    assert width[settings["reduce_dtype"]] == gradient_bytes
    assert width[settings["param_dtype"]] == state_bytes_per_param(precision)[0]
