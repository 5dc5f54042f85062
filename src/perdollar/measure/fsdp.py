"""``--plan``: run the ranks of ``--nproc`` under a data-parallel training plan.

A plan is written as the planner writes it ("fsdp+ac,mb4"): the strategy, ``+ac`` for activation
checkpointing, ``mbN`` for the sequences each process runs per step. What one host's processes
can measure is the sharding of data parallelism, so the strategies map onto PyTorch's:
``ddp`` replicates everything (DDP, FSDP's NO_SHARD), ``zero2`` keeps gathered parameters from
the forward to the backward (SHARD_GRAD_OP), ``fsdp`` gathers them again for the backward
(FULL_SHARD). Tensor and pipeline parallelism,
ZeRO-1, offload and gradient accumulation are refused with a one-line error before anything runs.
gloo carries the collectives on the CPU, NCCL on GPUs (see ``distributed.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perdollar.errors import PerdollarError
from perdollar.measure.bench_records import PlanRecord

if TYPE_CHECKING:
    import torch

    from perdollar.workload.step import StepRunner

# FSDP1's names for what each strategy shards (FSDP2 spells them as reshard_after_forward).
SHARDING = {"ddp": "NO_SHARD", "zero2": "SHARD_GRAD_OP", "fsdp": "FULL_SHARD"}
_HINT = "write it as ddp, zero2 or fsdp, with +ac for activation checkpointing and mbN, e.g. fsdp+ac,mb2"
# Class-name endings of the repeated blocks of common models: each is one FSDP unit and, with
# +ac, one checkpointed region (the granularity FSDP and activation checkpointing are used at).
_BLOCK_SUFFIXES = ("DecoderLayer", "Block", "EncoderLayer", "TransformerLayer")


@dataclass(frozen=True, slots=True)
class BenchPlan:
    strategy: str  # ddp | zero2 | fsdp
    activation_checkpointing: bool = False
    micro_batch: int | None = None  # sequences per process per step; None: the workload's batch

    @property
    def sharding(self) -> str:
        return SHARDING[self.strategy]

    def token(self) -> str:
        head = self.strategy + ("+ac" if self.activation_checkpointing else "")
        return head + (f",mb{self.micro_batch}" if self.micro_batch else "")


def parse_bench_plan(token: str) -> BenchPlan:
    """``"fsdp+ac,mb2"`` → BenchPlan; anything a single host's processes cannot run is bad input."""
    parts = [part.strip().lower() for part in token.split(",") if part.strip()]
    if not parts:
        raise PerdollarError("--plan is empty", _HINT)
    strategy, *flags = parts[0].split("+")
    if strategy not in SHARDING:
        measurable_elsewhere = strategy in ("zero1", "hsdp")
        problem = (
            f"--plan strategy {strategy!r} cannot be measured by bench"
            if measurable_elsewhere
            else f"unknown --plan strategy {strategy!r}"
        )
        raise PerdollarError(problem, _HINT)
    if any(flag != "ac" for flag in flags):
        raise PerdollarError(f"--plan {token!r} asks for {'+'.join(flags)!r}, which bench cannot run", _HINT)
    micro_batch = None
    for part in parts[1:]:
        name = part.rstrip("0123456789")
        number = part[len(name) :]
        if not number.isdigit() or int(number) < 1:
            raise PerdollarError(f"--plan part {part!r} is not a name and a positive count", _HINT)
        if name == "mb":
            micro_batch = int(number)
        elif name in ("tp", "pp", "ga") and int(number) == 1:
            continue
        else:
            raise PerdollarError(
                f"--plan part {part!r} cannot be measured by bench (data parallelism only)", _HINT
            )
    return BenchPlan(strategy, activation_checkpointing="ac" in flags, micro_batch=micro_batch)


def collective_dtype(precision: str, device: str) -> str | None:
    """The 16-bit type FSDP gathers weights and reduces gradients in on a GPU, or None (as stored).

    Predictions price those collectives at 2 bytes per parameter under mixed precision, so a GPU
    run uses the autocast type for them (the export writes the same). A CPU run is a functional
    check on gloo and keeps the fp32 the parameters are stored in.
    """
    if not device.startswith("cuda"):
        return None
    from perdollar.workload.step import autocast_dtype  # torch: only when a run is being set up

    dtype = autocast_dtype(precision)
    return str(dtype).removeprefix("torch.") if dtype is not None else None


def _block_classes(model: torch.nn.Module) -> set[type]:
    return {type(module) for module in model.modules() if type(module).__name__.endswith(_BLOCK_SUFFIXES)}


def wrap_for_plan(runner: StepRunner, device: str, plan: BenchPlan) -> None:
    """Shard the runner's model as the plan says and give it a fresh optimizer.

    ``ddp`` is DistributedDataParallel itself. ``zero2`` and ``fsdp`` use FSDP2 (``fully_shard``,
    which runs on gloo as on NCCL): each repeated block is a unit, then the whole model; ``fsdp``
    frees gathered parameters after the forward (FULL_SHARD), ``zero2`` keeps them to the backward
    (SHARD_GRAD_OP). The optimizer is rebuilt because sharding replaces the parameters. On a GPU
    under mixed precision the weights are gathered and the gradients reduced in the 16-bit type
    (FSDP2's ``MixedPrecisionPolicy``; DDP's compression hook), the bytes predictions price.
    """
    from perdollar.measure.distributed import wrap_data_parallel
    from perdollar.workload.step import make_optimizer

    model = runner.model
    blocks = _block_classes(model)
    if plan.activation_checkpointing:
        if not blocks:
            raise RuntimeError("+ac found no repeated transformer blocks to checkpoint in this model")
        from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
            apply_activation_checkpointing,
        )

        apply_activation_checkpointing(model, check_fn=lambda module: type(module) in blocks)
    dtype_name = collective_dtype(runner.workload.precision, device)
    if plan.strategy == "ddp":
        wrap_data_parallel(runner, device)
        if dtype_name is not None:
            from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
            from torch.nn.parallel import DistributedDataParallel

            compress = {"bfloat16": default_hooks.bf16_compress_hook,
                        "float16": default_hooks.fp16_compress_hook}  # fmt: skip
            wrapped = runner.model  # the DDP wrapper wrap_data_parallel just set
            if isinstance(wrapped, DistributedDataParallel):
                wrapped.register_comm_hook(None, compress[dtype_name])
        return
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cuda" if device.startswith("cuda") else "cpu", (dist.get_world_size(),))
    options: dict[str, Any] = {"mesh": mesh, "reshard_after_forward": plan.strategy == "fsdp"}
    if dtype_name is not None:
        import torch
        from torch.distributed.fsdp import MixedPrecisionPolicy

        dtype = getattr(torch, dtype_name)
        options["mp_policy"] = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=dtype)
    for module in [m for m in model.modules() if type(m) in blocks]:
        fully_shard(module, **options)
    fully_shard(model, **options)
    try:
        runner.optimizer = make_optimizer(runner.workload, model)
    except AttributeError:  # a frozen/slotted runner: set it the way its own __init__ would
        object.__setattr__(runner, "optimizer", make_optimizer(runner.workload, model))


def plan_record(plan: BenchPlan, world: int, *, precision: str, device: str) -> PlanRecord:
    """What the measurement keeps of the plan, so it can be matched to predictions of it."""
    return {
        "plan": plan.token(),
        "sharding": plan.sharding,
        "activation_checkpointing": plan.activation_checkpointing,
        "data_parallel": world,
        "collective_dtype": collective_dtype(precision, device) or "as stored",
    }
