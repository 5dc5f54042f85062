"""Whether a training plan can run on a cluster at all: its parallel degrees against the GPUs, hosts,
layers, heads and experts, and the global batch against its data-parallel ranks."""

from __future__ import annotations

from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.parallel_limits import pipeline_parallel_problem, tensor_parallel_problem
from perdollar.workload.llm.architecture import DecoderArchitecture


def plan_problem(
    plan: TrainingPlan, arch: DecoderArchitecture, gpus_per_node: int, nodes: int, global_batch: int
) -> str:
    """Why ``plan`` cannot run on this cluster at all ('' when it can)."""
    tp, pp = plan.tensor_parallel, plan.pipeline_parallel
    if gpus_per_node < 1:
        return "a fraction of a GPU cannot train a language model"
    if gpus_per_node % tp:
        return f"tensor parallel {tp} does not divide the {gpus_per_node} GPUs of a host"
    if nodes % pp and gpus_per_node % (tp * pp):
        return (
            f"pipeline parallel {pp} neither divides {nodes} hosts nor fits in a host of {gpus_per_node} "
            f"GPUs beside tensor parallel {tp}"
        )
    if (gpus_per_node * nodes) % (tp * pp * plan.context_parallel):
        return (
            f"tensor {tp} × pipeline {pp} × context parallel {plan.context_parallel} does not divide "
            f"{gpus_per_node * nodes} GPUs"
        )
    # The expert layers fold tensor parallelism into their own layout (Megatron-Core's parallel
    # folding, torchtitan's expert mesh): their ranks are the tensor- and data-parallel ones.
    experts = expert_parallel_problem(
        plan, arch, plan.gradient_group_size(gpus_per_node * nodes) * plan.tensor_parallel
    )
    if experts:
        return experts
    chunks = pp * plan.virtual_stages  # interleaving splits each stage's layers into its chunks
    shape = pipeline_parallel_problem(arch, chunks) or tensor_parallel_problem(arch, tp, serving=False)
    if shape:
        return shape
    if plan.strategy == "hsdp" and plan.hosts_per_stage(nodes) < 2:
        return "HSDP replicates across hosts: it needs at least 2 hosts per pipeline stage"
    data_parallel = plan.data_parallel_size(gpus_per_node * nodes)
    return global_batch_problem(global_batch, data_parallel, plan.micro_batch)


def expert_parallel_problem(plan: TrainingPlan, arch: DecoderArchitecture, group: int) -> str:
    """Why the plan's expert parallelism cannot split this model's experts ('' when it can)."""
    ep = plan.expert_parallel
    if ep < 2:
        return ""
    if not arch.is_moe:
        return f"expert parallel {ep} needs a mixture-of-experts model; {arch.name} is dense"
    if arch.num_experts % ep:
        return f"expert parallel {ep} does not divide the model's {arch.num_experts} experts"
    if group % ep:
        return f"expert parallel {ep} does not divide the {group} tensor-, data- and context-parallel ranks"
    return ""


def global_batch_problem(global_batch: int, data_parallel: int, micro_batch: int) -> str:
    """Why a step of ``global_batch`` sequences cannot be split evenly ('' when it can).

    Each optimizer step runs the same number of micro-batches on every data-parallel rank, so
    the global batch is a whole multiple of ranks × micro-batch (Megatron-LM refuses any other).
    """
    unit = data_parallel * micro_batch
    if global_batch % unit == 0:
        return ""
    lower, upper = global_batch // unit * unit, (global_batch // unit + 1) * unit
    nearest = f"{lower} or {upper}" if lower else str(upper)
    size = "smaller than" if global_batch < unit else "not a multiple of"
    return (
        f"global batch {global_batch} is {size} {data_parallel} data-parallel ranks × micro-batch "
        f"{micro_batch} = {unit} (nearest that divide evenly: {nearest})"
    )
