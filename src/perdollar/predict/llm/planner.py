"""The best training plan for one cluster (instance type × hosts), by bounded search.

The search space, for G GPUs per host and H hosts: strategy ∈ {ddp, zero1, zero2, fsdp, hsdp}
(sharding strategies only where there are several data-parallel ranks, HSDP only across hosts)
× tensor parallel ∈ divisors of G up to 8 × pipeline parallel ∈ divisors of H × activation
checkpointing off/on × micro-batch ∈ {1, 2, 4, …, 64} up to the largest that fits: at most
5 × 4 × d(H) × 2 × 7 plans, each priced by arithmetic on cached traces; then
(:func:`pipeline_shapes`) pipelines of 2 or 4 stages inside a host where the hosts cannot take a
stage each, every pipeline interleaved with 2 virtual stages where its layers divide, and for a
mixture of experts every shape with its experts spread over 2, 4 or 8 ranks of a host; and for
sequences of ``CONTEXT_PARALLEL_MIN_SEQ_LEN`` tokens or more (:mod:`.context_search`), every shape
of the bounded space split over 2, 4 or 8 context-parallel ranks where the GPUs, the global batch
and the sequence's load-balanced halves divide, rings inside a host first. A plan
whose throughput before data-parallel communication and the optimizer (an upper bound) cannot come within the
margin of the best found so far is skipped.
Price is fixed per cluster, so the fastest feasible plan is best for every objective; among
plans within ``SIMPLER_PLAN_MARGIN`` of the fastest, the simplest wins (no model parallelism,
DDP before ZeRO before FSDP, no checkpointing), so a small model keeps plain data parallelism.
A plan that fits only inside the memory estimate's reserve (tight, :mod:`.memory`) is chosen only
where no plan fits with room. When nothing fits, the nearest miss (fewest bytes over) is
reported. Plans the model's shape or the global batch rule out are skipped with their reason
(:func:`plan_problem`): tensor parallel must split the attention and KV heads evenly, pipeline
stages cannot outnumber the layers, and data-parallel ranks × micro-batch must divide the global
batch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypedDict

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm.context_search import context_shapes
from perdollar.predict.llm.frameworks import MODEL_PARALLEL, framework_for
from perdollar.predict.llm.plan import STRATEGIES, TrainingPlan
from perdollar.predict.llm.stage import LLMEfficiency, throughput_ceiling
from perdollar.predict.llm.step import LLMTrainingPrediction, plan_memory, plan_problem, predict_llm_training
from perdollar.workload.llm.architecture import DecoderArchitecture

MICRO_BATCHES = (1, 2, 4, 8, 16, 32, 64)
MAX_TENSOR_PARALLEL = 8
# A sharded plan must beat a simpler one by more than this to be chosen: ZeRO's sharded optimizer
# step and its half-precision weights (no per-forward cast) save a small model a few percent,
# below what the prediction can tell apart, and plain DDP is what such a model runs.
SIMPLER_PLAN_MARGIN = 0.05


@dataclass(frozen=True, slots=True)
class PlanSearch:
    """The outcome of a search: the best feasible prediction, or the nearest miss."""

    best: LLMTrainingPrediction | None
    nearest_miss: LLMTrainingPrediction | None
    evaluated: int
    problem: str = ""  # why no plan could run at all (when neither a best nor a miss exists)


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def plan_shapes(
    arch: DecoderArchitecture,
    gpus_per_node: int,
    nodes: int,
    *,
    finetune: str,
    lora_rank: int,
    framework: str | None = None,
    optimizer: str | None = None,
    seq_len: int | None = None,
    global_batch: int | None = None,
) -> list[TrainingPlan]:
    """Every (strategy, TP, PP, checkpointing) of the bounded space, at micro-batch 1, and the
    pipeline, expert- and context-parallel shapes beyond it (context parallel only for a long
    ``seq_len``; none when it is not given)."""
    # Only the kinds of model parallelism the framework runs are searched (Unsloth: none).
    runs = framework_for(framework, finetune).model_parallel
    shapes = []
    for tp in _divisors(gpus_per_node, MAX_TENSOR_PARALLEL) if "tensor" in runs else [1]:
        for pp in _divisors(nodes, arch.num_layers) if "pipeline" in runs else [1]:
            data_parallel = gpus_per_node * nodes // (tp * pp)
            for strategy in STRATEGIES:
                if data_parallel == 1 and strategy != "ddp":
                    continue  # one replica: every strategy is the same
                if strategy == "hsdp" and nodes // pp < 2:
                    continue
                for checkpointing in (False, True):
                    shapes.append(
                        TrainingPlan(
                            strategy, tp, pp, checkpointing, finetune=finetune, lora_rank=lora_rank,
                            framework=framework, optimizer=optimizer,
                        )
                    )  # fmt: skip
    contexts = (
        context_shapes(gpus_per_node, nodes, shapes, seq_len=seq_len, global_batch=global_batch)
        if "context" in runs
        else []
    )
    return shapes + pipeline_shapes(arch, gpus_per_node, nodes, shapes, runs) + contexts


# Beyond the bounded space: pipelines inside one host (when the hosts cannot take a stage each) and
# interleaved schedules of every pipeline. Pipeline plans pair with DDP or ZeRO-1, as Megatron runs them.
IN_HOST_PIPELINES = (2, 4)
VIRTUAL_STAGES = (2,)
PIPELINE_STRATEGIES = ("ddp", "zero1")
# Expert-parallel degrees searched: inside a host and across hosts, wherever they divide the experts
# and the gradient group (Megatron-Core and torchtitan take any such degree).
EXPERT_PARALLEL = (2, 4, 8, 16, 32, 64)


def pipeline_shapes(
    arch: DecoderArchitecture, gpus_per_node: int, nodes: int, base: list[TrainingPlan],
    runs: frozenset[str] = frozenset(MODEL_PARALLEL),
) -> list[TrainingPlan]:  # fmt: skip
    """Pipelines inside one host and interleaved variants of the pipelines of ``base``, and expert
    parallel variants of ``base``: those of the kinds of model parallelism in ``runs``."""
    if not base:
        return []
    template = base[0]
    shapes = []
    for pp in IN_HOST_PIPELINES if "pipeline" in runs else ():
        if nodes % pp == 0 or pp > arch.num_layers:
            continue  # the hosts take a stage each (the bounded space has it), or too few layers
        for tp in _divisors(gpus_per_node, MAX_TENSOR_PARALLEL):
            if gpus_per_node % (tp * pp):
                continue
            for strategy in PIPELINE_STRATEGIES:
                if strategy != "ddp" and gpus_per_node * nodes == tp * pp:
                    continue
                for checkpointing in (False, True):
                    shapes.append(
                        replace(
                            template, strategy=strategy, tensor_parallel=tp, pipeline_parallel=pp,
                            activation_checkpointing=checkpointing,
                        )
                    )  # fmt: skip
    pipelines = [s for s in base + shapes if s.pipeline_parallel > 1]
    if arch.is_moe and "expert" in runs:  # experts spread over the data-parallel ranks, a host's or more
        shapes += [
            replace(s, expert_parallel=ep)
            for s in base
            for ep in EXPERT_PARALLEL
            if arch.num_experts % ep == 0 and s.data_parallel_size(gpus_per_node * nodes) % ep == 0
        ]
    for virtual in VIRTUAL_STAGES:
        shapes += [
            replace(s, virtual_stages=virtual)
            for s in pipelines
            if arch.num_layers % (s.pipeline_parallel * virtual) == 0
        ]
    return shapes


def _complexity(plan: TrainingPlan) -> tuple[int, ...]:
    return (
        plan.tensor_parallel * plan.pipeline_parallel * plan.context_parallel,
        plan.expert_parallel,
        plan.virtual_stages,
        STRATEGIES.index(plan.strategy),
        int(plan.activation_checkpointing),
        -plan.micro_batch,
    )


class _Cluster(TypedDict):
    gpus_per_node: int
    nodes: int
    seq_len: int
    global_batch: int


class _Link(TypedDict):
    network_gbps: float | None
    efa_interfaces: int | None
    efficiency: LLMEfficiency
    attention_kernel: str


def search_plans(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    *,
    gpus_per_node: int,
    nodes: int,
    seq_len: int,
    global_batch: int,
    precision: str = "amp-bf16",
    finetune: str = "full",
    lora_rank: int = 16,
    framework: str | None = None,
    optimizer: str | None = None,
    micro_batch: int | None = None,
    network_gbps: float | None = None,
    efa_interfaces: int | None = None,
    efficiency: LLMEfficiency | None = None,
    shapes: list[TrainingPlan] | None = None,
    attention_kernel: str = "flash2",
) -> PlanSearch:
    """The fastest plan that fits (or the nearest miss) on ``nodes`` × ``gpus_per_node`` GPUs."""
    eff = efficiency or LLMEfficiency()
    context: _Cluster = {
        "gpus_per_node": gpus_per_node,
        "nodes": nodes,
        "seq_len": seq_len,
        "global_batch": global_batch,
    }
    link: _Link = {
        "network_gbps": network_gbps,
        "efa_interfaces": efa_interfaces,
        "efficiency": eff,
        "attention_kernel": attention_kernel,
    }
    candidates = shapes or plan_shapes(
        arch, gpus_per_node, nodes, finetune=finetune, lora_rank=lora_rank, framework=framework,
        optimizer=optimizer, seq_len=seq_len, global_batch=global_batch,
    )  # fmt: skip
    found = _search(arch, accelerator, candidates, context, link, precision, micro_batch)
    offloadable = [replace(s, cpu_offload=True) for s in candidates if not s.cpu_offload]
    if found.best is None and found.nearest_miss is not None and offloadable:
        # Nothing fits on the GPUs: the frameworks keep the optimizer in host memory when asked
        # (Megatron-Core's --optimizer-cpu-offload, FSDP's CPUOffload, DeepSpeed's offload_optimizer),
        # so "does not fit" is said only once that too is out of reach; the plan's text says so.
        offloaded = _search(arch, accelerator, offloadable, context, link, precision, micro_batch)
        if offloaded.best is not None:
            return replace(offloaded, evaluated=found.evaluated + offloaded.evaluated)
        return replace(found, evaluated=found.evaluated + offloaded.evaluated)
    return found


def _search(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    candidates: list[TrainingPlan],
    context: _Cluster,
    link: _Link,
    precision: str,
    micro_batch: int | None,
) -> PlanSearch:
    gpus_per_node, nodes, global_batch = context["gpus_per_node"], context["nodes"], context["global_batch"]
    eff, attention_kernel = link["efficiency"], link["attention_kernel"]
    feasible: list[LLMTrainingPrediction] = []
    misses: list[tuple[float, TrainingPlan]] = []
    evaluated = 0
    # Checkpointing only adds work at a given micro-batch: with it, only the micro-batches that
    # do not fit without it are worth pricing.
    largest_without: dict[TrainingPlan, int] = {}
    fastest = 0.0
    problems: list[str] = []
    for shape in candidates:
        sizes = (micro_batch,) if micro_batch else MICRO_BATCHES
        first = replace(shape, micro_batch=sizes[0])
        problem = plan_problem(first, arch, gpus_per_node, nodes, global_batch)
        if problem:
            problems.append(problem)
            continue
        memory, _, _ = plan_memory(
            arch, accelerator, first, precision=precision, **context, efficiency=eff,
            attention_kernel=attention_kernel,
        )  # fmt: skip
        if not memory.fits:
            misses.append((memory.total - memory.capacity, first))
            continue
        data_parallel = first.data_parallel_size(gpus_per_node * nodes)
        # A tight first micro-batch (into the reserve) is the largest this shape runs.
        largest = micro_batch if micro_batch else max(memory.largest_micro_batch, first.micro_batch)
        plain = replace(first, activation_checkpointing=False)
        if not shape.activation_checkpointing:
            largest_without[plain] = largest
        recomputes = shape.activation_checkpointing and not micro_batch
        smallest = largest_without.get(plain, 0) + 1 if recomputes else 1
        allowed = [s for s in sizes if smallest <= s <= largest and global_batch % (s * data_parallel) == 0]
        for size in reversed(allowed):  # large micro-batches first: a fast plan early prunes the rest
            plan = replace(shape, micro_batch=size)
            if (
                fastest
                and throughput_ceiling(arch, accelerator, plan, precision=precision, **context, **link)
                < (1 - SIMPLER_PLAN_MARGIN) * fastest
            ):
                continue  # cannot come within the margin of a plan already found
            prediction = predict_llm_training(
                arch, accelerator, plan=plan, precision=precision, **context, **link
            )
            evaluated += 1
            if prediction.fits:
                feasible.append(prediction)
                if not prediction.memory_tight:  # a tight plan prunes nothing: it may not be kept
                    fastest = max(fastest, prediction.tokens_per_second)
    # A plan with room beats a tight one, however fast: tight plans are the fallback.
    roomy = [p for p in feasible if not p.memory_tight]
    feasible = roomy or feasible
    if feasible:
        fastest = max(p.tokens_per_second for p in feasible)
        close = [p for p in feasible if p.tokens_per_second >= (1 - SIMPLER_PLAN_MARGIN) * fastest]
        return PlanSearch(min(close, key=lambda p: _complexity(p.plan)), None, evaluated)
    if not misses:
        # The simplest shape's problem (the candidates run from the least model parallelism up).
        return PlanSearch(None, None, evaluated, problems[0] if problems else "no plan in the search space")
    _, nearest = min(misses, key=lambda item: item[0])
    miss = predict_llm_training(arch, accelerator, plan=nearest, precision=precision, **context, **link)
    return PlanSearch(None, miss, evaluated + 1)
