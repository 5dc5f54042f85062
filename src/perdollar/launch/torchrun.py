"""Launches of a language-model training plan: a ``torchrun`` command and a SkyPilot task.

The plan perdollar chose (or the user fixed) reaches the training script twice: as the
``torchrun`` shape (nodes × processes per node, one process per GPU) and as environment
variables the script reads (``PERDOLLAR_SHARDING`` = the FSDP ``ShardingStrategy`` name,
micro-batch, gradient accumulation, tensor and pipeline degrees, activation checkpointing, CPU
offload, precision). Descriptions only: nothing here starts a process or calls a cloud.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence

from perdollar.jsonable import JsonObject, JsonValue

RENDEZVOUS_PORT = 29500
# perdollar's strategies in the names torch.distributed.fsdp.ShardingStrategy uses. ZeRO-1 has no
# FSDP strategy: weights and gradients stay whole (NO_SHARD) and the optimizer states alone are
# sharded, by torch.distributed.optim.ZeroRedundancyOptimizer over DDP (a variable of its own).
SHARDING = {
    "ddp": "NO_SHARD",
    "zero1": "NO_SHARD",
    "zero2": "SHARD_GRAD_OP",
    "fsdp": "FULL_SHARD",
    "hsdp": "HYBRID_SHARD",
}
SHARDS_OPTIMIZER_APART = {"zero1"}  # strategies whose optimizer is wrapped in ZeroRedundancyOptimizer
_BACKWARD_PREFETCH = {"pre": "BACKWARD_PRE", "post": "BACKWARD_POST"}  # FSDP's BackwardPrefetch names
_PARAM_DTYPE = {"amp-bf16": "bfloat16", "bf16": "bfloat16", "amp-fp16": "float16", "fp16": "float16",
                "fp8": "bfloat16", "fp8-rowwise": "bfloat16"}  # fmt: skip


def plan_environment(plan: Mapping[str, object], *, seq_len: int, global_batch: int,
                     precision: str) -> dict[str, str]:  # fmt: skip
    """The variables that tell the training script how to shard, batch and checkpoint: one a
    concept, each holding one value the script can act on (a name, a number, 1 or 0)."""
    strategy = str(plan["strategy"])
    environment = {
        "PERDOLLAR_PLAN": str(plan["token"]),
        "PERDOLLAR_SHARDING": SHARDING[strategy],
        "PERDOLLAR_ZERO_REDUNDANCY_OPTIMIZER": "1" if strategy in SHARDS_OPTIMIZER_APART else "0",
        "PERDOLLAR_TENSOR_PARALLEL": str(plan["tensor_parallel"]),
        "PERDOLLAR_TENSOR_PARALLEL_COMM": str(plan.get("tensor_parallel_comm", "overlapped")),
        "PERDOLLAR_DATA_PARALLEL_COMM": str(plan.get("data_parallel_comm", "overlapped")),
        "PERDOLLAR_PIPELINE_PARALLEL": str(plan["pipeline_parallel"]),
        "PERDOLLAR_VIRTUAL_STAGES": str(plan.get("virtual_stages", 1)),
        "PERDOLLAR_CONTEXT_PARALLEL": str(plan.get("context_parallel", 1)),
        "PERDOLLAR_EXPERT_PARALLEL": str(plan.get("expert_parallel", 1)),
        "PERDOLLAR_MICRO_BATCH": str(plan["micro_batch"]),
        "PERDOLLAR_GRADIENT_ACCUMULATION": str(plan["gradient_accumulation"]),
        "PERDOLLAR_GLOBAL_BATCH": str(global_batch),
        "PERDOLLAR_SEQ_LEN": str(seq_len),
        "PERDOLLAR_ACTIVATION_CHECKPOINTING": "1" if plan["activation_checkpointing"] else "0",
        "PERDOLLAR_SELECTIVE_CHECKPOINTING": "1" if plan.get("selective_checkpointing") else "0",
        "PERDOLLAR_CPU_OFFLOAD": "1" if plan["cpu_offload"] else "0",
        "PERDOLLAR_BACKWARD_PREFETCH": _BACKWARD_PREFETCH[str(plan.get("backward_prefetch", "pre"))],
        "PERDOLLAR_PRECISION": precision,
        "PERDOLLAR_OPTIMIZER": str(plan.get("optimizer", "adamw")),
        "PERDOLLAR_OPTIMIZER_IN_BACKWARD": "1" if plan.get("optimizer_in_backward") else "0",
        "PERDOLLAR_FINETUNE": str(plan.get("finetune", "full")),
    }
    if environment["PERDOLLAR_FINETUNE"] != "full":  # a rank only means something to LoRA adapters
        environment["PERDOLLAR_LORA_RANK"] = str(plan.get("lora_rank", 16))
    return environment


def fsdp_settings(plan: Mapping[str, object], precision: str) -> JsonObject:
    """The same plan as the FSDP constructor's arguments, for a reader wiring them by hand."""
    dtype = _PARAM_DTYPE.get(precision)
    return {
        "sharding_strategy": SHARDING[str(plan["strategy"])],
        "zero_redundancy_optimizer": str(plan["strategy"]) in SHARDS_OPTIMIZER_APART,
        "mixed_precision": {"param_dtype": dtype, "reduce_dtype": dtype, "buffer_dtype": dtype}
        if dtype else None,
        "cpu_offload": bool(plan["cpu_offload"]),
        "backward_prefetch": _BACKWARD_PREFETCH[str(plan.get("backward_prefetch", "pre"))],
        "activation_checkpointing": bool(plan["activation_checkpointing"]),
        "selective_checkpointing": bool(plan.get("selective_checkpointing")),
        "note": "fp32 master weights and optimizer states, as the memory model assumes; weights "
        "gathered and gradients reduced in the 16-bit type, as the step time prices them (a float32 "
        "reduce_dtype doubles the gradient bytes on the network)"
        if dtype and precision.startswith("amp") else "",
    }  # fmt: skip


def torchrun_command(script: str, script_args: Sequence[str], *, nodes: int, gpus_per_node: int,
                     skypilot: bool = False) -> str:  # fmt: skip
    """One node's ``torchrun`` line; several nodes rendezvous at the first node's address."""
    arguments = ["torchrun", f"--nproc-per-node={gpus_per_node}"]
    if nodes == 1:
        arguments.append("--standalone")
    elif skypilot:
        arguments += ['--nnodes="$SKYPILOT_NUM_NODES"', '--node-rank="$SKYPILOT_NODE_RANK"',
                      '--master-addr="$(echo "$SKYPILOT_NODE_IPS" | head -n1)"',
                      f"--master-port={RENDEZVOUS_PORT}"]  # fmt: skip
    else:
        arguments += [f"--nnodes={nodes}", '--node-rank="$NODE_RANK"', '--master-addr="$MASTER_ADDR"',
                      f"--master-port={RENDEZVOUS_PORT}"]  # fmt: skip
    return " ".join([*arguments, shlex.quote(script), *(shlex.quote(a) for a in script_args)])


def torchrun_description(prediction: Mapping[str, JsonValue], *, script: str, script_args: Sequence[str],
                         label: str) -> JsonObject:  # fmt: skip
    """What to run on each node: the environment and the command, with the plan they carry."""
    plan, nodes = _plan(prediction), _whole(prediction, "nodes")
    gpus = _whole(prediction, "gpus") // nodes
    environment = plan_environment(plan, seq_len=_whole(prediction, "seq_len"),
                                   global_batch=_whole(prediction, "global_batch"),
                                   precision=str(prediction["precision"]))  # fmt: skip
    command = torchrun_command(script, script_args, nodes=nodes, gpus_per_node=gpus)
    exports = [f"export {name}={shlex.quote(value)}" for name, value in environment.items()]
    before = [] if nodes == 1 else [f"# on every node: NODE_RANK 0…{nodes - 1} and MASTER_ADDR of node 0"]
    return {
        "format": "torchrun",
        "configuration": label,
        "nodes": nodes,
        "gpus_per_node": gpus,
        "plan": plan,
        "plan_text": prediction.get("plan_text", ""),
        "environment": dict(environment),
        "fsdp": fsdp_settings(plan, str(prediction["precision"])),
        "command": command,
        "script": "\n".join([*before, *exports, command]) + "\n",
    }


def skypilot_training_task(prediction: Mapping[str, JsonValue], *, script: str, script_args: Sequence[str],
                           spot: bool, region: str | None, name: str) -> JsonObject:  # fmt: skip
    """A SkyPilot task: ``num_nodes`` co-located nodes running the plan under ``torchrun``.

    The instance type alone names the machine (SkyPilot knows its GPUs), so no accelerator name
    from perdollar's catalog has to match SkyPilot's vocabulary.
    """
    plan, nodes = _plan(prediction), _whole(prediction, "nodes")
    gpus = _whole(prediction, "gpus") // nodes
    infra = "/".join(part for part in (str(prediction["cloud"]), region) if part)
    resources: JsonObject = {
        "infra": infra,
        "instance_type": prediction["instance_type"],
        "use_spot": spot,
    }
    if nodes > 1 and prediction["cloud"] in ("aws", "gcp"):
        resources["network_tier"] = "best"  # EFA / GPUDirect where the instance has it
    if spot:
        resources["job_recovery"] = {"strategy": "FAILOVER"}  # a preempted run resumes elsewhere
    return {
        "name": name,
        "num_nodes": nodes,
        "resources": resources,
        "workdir": ".",
        "envs": dict(
            plan_environment(
                plan,
                seq_len=_whole(prediction, "seq_len"),
                global_batch=_whole(prediction, "global_batch"),
                precision=str(prediction["precision"]),
            )
        ),
        "run": torchrun_command(script, script_args, nodes=nodes, gpus_per_node=gpus, skypilot=True) + "\n",
    }


def _plan(prediction: Mapping[str, JsonValue]) -> JsonObject:
    plan = prediction["plan"]
    if not isinstance(plan, dict):
        raise TypeError(f"the prediction's plan is {type(plan).__name__}, not an object")
    return plan


def _whole(prediction: Mapping[str, JsonValue], name: str) -> int:
    value = prediction[name]
    if value is None or isinstance(value, list | dict):
        raise TypeError(f"the prediction's {name} is {type(value).__name__}, not a number")
    return int(value)
