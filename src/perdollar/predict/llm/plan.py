"""How a language model's training step is spread over GPUs: a training plan, its text and token.

A plan names the data-parallel strategy (how weights, gradients and optimizer states are
sharded), tensor parallelism inside a host, pipeline parallelism across hosts (or inside one
when the hosts cannot take a stage each; interleaved over virtual stages), context and expert
parallelism, the framework that runs it (:mod:`perdollar.predict.llm.frameworks`), activation
checkpointing (full: each layer recomputed from its input; selective: PyTorch's per-operator
policy, keeping attention's and every other matrix product's outputs), the micro-batch and
gradient accumulation, and the fine-tuning mode. Its token (``fsdp+ac,mb4,ga8``,
``fsdp+sac,mb2``, ``hsdp,tp8,pp2,vp2``, ``ddp,lora16,hf``) is compact and parses back.

Tensor parallelism's collectives either run beside the matrix products they feed (the default,
and what the planner proposes: Megatron-Core's ``--tp-comm-overlap``, torchtitan's async TP) or
block them (``tp8-blocking``: Megatron-LM before Transformer Engine, torchtitan's plain TP,
Megatron-Core without the flag).

FSDP full-shard and HSDP gather each layer's weights again in the backward. PyTorch's FSDP
prefetches that gather before the layer's gradients are computed (``BACKWARD_PRE``, its
default, and FSDP2's): it runs beside the previous layer's backward. ``+backward-post``
(``BACKWARD_POST``, Composer's and so LLM Foundry's default) issues it only once those gradients
are done, so the next layer's backward waits for the whole gather.

DDP and ZeRO reduce the gradients beside the backward (PyTorch's DDP buckets, Megatron's
``--overlap-grad-reduce``) unless the plan says ``+blocking``: Megatron-LM's own DDP before that
flag (its 2019 and 2021 releases) reduced them only once the whole backward was done, and ZeRO's
weight gather then waits for the optimizer step too.

Expert parallelism's dispatch and combine send every routed copy of a token to its expert's rank
and wait for it (Megatron-Core's alltoall dispatcher, torchtitan's default) unless the plan says
otherwise. ``ep8-deepep``: DeepEP's kernels (Megatron-Core's flex dispatcher, torchtitan's
``use_deepep``) send a token once to each rank holding any of its experts and, across hosts, once
to each host, which forwards it over its GPU link (DeepEP's README, "normal kernels"
forwarding from NVLink to RDMA). ``ep32-overlapped``: Megatron-Core's
``--overlap-moe-expert-parallel-comm`` runs one micro-batch's exchange beside another's compute.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perdollar.errors import PerdollarError
from perdollar.predict.llm.frameworks import (
    FRAMEWORKS,
    MODEL_PARALLEL,
    Framework,
    framework_for,
    parallelism_problem,
)
from perdollar.predict.llm.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS, Optimizer, optimizer_for

STRATEGIES = ("ddp", "zero1", "zero2", "fsdp", "hsdp")
FINETUNE_MODES = ("full", "lora", "qlora")
TENSOR_PARALLEL_COMMS = ("overlapped", "blocking")
BACKWARD_PREFETCHES = ("pre", "post")
DATA_PARALLEL_COMMS = ("overlapped", "blocking")
EXPERT_DISPATCHES = ("all-to-all", "deepep")
EXPERT_PARALLEL_COMMS = ("blocking", "overlapped")
_REGATHERING = ("fsdp", "hsdp")  # the strategies whose backward gathers the weights again
_STRATEGY_TEXT = {
    "ddp": "DDP (replicated)",
    "zero1": "ZeRO-1 (optimizer states sharded)",
    "zero2": "ZeRO-2 / FSDP shard-grad-op",
    "fsdp": "FSDP full-shard",
    "hsdp": "HSDP (shard in a node, replicate across nodes)",
}


@dataclass(frozen=True, slots=True)
class TrainingPlan:
    """One way of running a training step over a cluster."""

    strategy: str  # ddp | zero1 | zero2 | fsdp | hsdp
    tensor_parallel: int = 1  # inside a host's NVLink domain
    pipeline_parallel: int = 1  # across hosts, 1F1B
    activation_checkpointing: bool = False
    micro_batch: int = 1  # sequences per GPU per micro-step
    gradient_accumulation: int = 1  # = global_batch / (micro_batch × data_parallel_size)
    cpu_offload: bool = False  # optimizer states (and master weights) in host memory
    finetune: str = "full"  # full | lora | qlora
    lora_rank: int = 16
    selective_checkpointing: bool = False  # recompute all but attention and half the matrix products
    tensor_parallel_comm: str = "overlapped"  # overlapped | blocking (see the module's docstring)
    backward_prefetch: str = "pre"  # pre | post: when FSDP issues the backward's weight gather
    data_parallel_comm: str = "overlapped"  # overlapped | blocking: DDP/ZeRO's gradient reduction
    framework: str | None = None  # a name of predict.llm.frameworks; None: the mode's default
    virtual_stages: int = 1  # interleaved 1F1B: model chunks per pipeline rank (Megatron's V)
    context_parallel: int = 1  # ranks splitting each sequence (ring attention)
    expert_parallel: int = 1  # data-parallel ranks splitting a MoE layer's routed experts
    optimizer: str | None = None  # a name of predict.llm.optimizers; None: AdamW
    # Each parameter's update runs as soon as its gradient is complete, and the gradient is freed
    # at once (torchtune's optimizer_in_bwd; PyTorch's register_post_accumulate_grad_hook).
    optimizer_in_backward: bool = False
    expert_dispatch: str = "all-to-all"  # all-to-all | deepep (see the module's docstring)
    expert_parallel_comm: str = "blocking"  # blocking | overlapped: the exchange beside compute

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise PerdollarError(
                f"unknown training strategy {self.strategy!r}", f"use one of {', '.join(STRATEGIES)}"
            )
        if self.finetune not in FINETUNE_MODES:
            raise PerdollarError(
                f"unknown fine-tuning mode {self.finetune!r}", f"use one of {', '.join(FINETUNE_MODES)}"
            )
        if self.tensor_parallel_comm not in TENSOR_PARALLEL_COMMS:
            raise PerdollarError(
                f"unknown tensor-parallel communication {self.tensor_parallel_comm!r}",
                f"use one of {', '.join(TENSOR_PARALLEL_COMMS)}",
            )
        if self.backward_prefetch not in BACKWARD_PREFETCHES:
            raise PerdollarError(
                f"unknown backward prefetch {self.backward_prefetch!r}",
                f"use one of {', '.join(BACKWARD_PREFETCHES)}",
            )
        if self.data_parallel_comm not in DATA_PARALLEL_COMMS:
            raise PerdollarError(
                f"unknown data-parallel communication {self.data_parallel_comm!r}",
                f"use one of {', '.join(DATA_PARALLEL_COMMS)}",
            )
        if self.expert_dispatch not in EXPERT_DISPATCHES:
            raise PerdollarError(
                f"unknown expert dispatch {self.expert_dispatch!r}",
                f"use one of {', '.join(EXPERT_DISPATCHES)}",
            )
        if self.expert_parallel_comm not in EXPERT_PARALLEL_COMMS:
            raise PerdollarError(
                f"unknown expert-parallel communication {self.expert_parallel_comm!r}",
                f"use one of {', '.join(EXPERT_PARALLEL_COMMS)}",
            )
        if self.data_parallel_comm == "blocking" and self.strategy in _REGATHERING:
            raise PerdollarError(
                f"+blocking is for strategies that reduce gradients after the backward, not {self.strategy}",
                "use it with ddp, zero1 or zero2; for FSDP's exposed gather write +backward-post",
            )
        if self.backward_prefetch == "post" and self.strategy not in _REGATHERING:
            raise PerdollarError(
                f"+backward-post needs a strategy whose backward gathers the weights, not {self.strategy}",
                "use it with fsdp or hsdp, or drop it",
            )
        if self.activation_checkpointing and self.selective_checkpointing:
            raise PerdollarError(
                "a plan checkpoints activations fully or selectively, not both", "write +ac or +sac"
            )
        optimizer_for(self.optimizer)
        framework = framework_for(self.framework, self.finetune)
        if self.finetune != "full" and framework.lora == "none":
            raise PerdollarError(
                f"{framework.title} trains no LoRA adapters of its own",
                "choose --framework nemo, hf, torchtune or unsloth for LoRA and QLoRA",
            )
        degrees = {name: getattr(self, name) for name in MODEL_PARALLEL.values()}
        split = parallelism_problem(framework, degrees)
        if split:
            raise PerdollarError(
                split, "drop that parallelism (its --…-parallel flag or plan token), or choose one of those"
            )
        if self.optimizer_in_backward and self.gradient_accumulation > 1:
            raise PerdollarError(
                "an optimizer stepped inside the backward cannot accumulate gradients over micro-batches",
                "drop +optimizer-in-backward, or raise the micro-batch so that accumulation is 1",
            )
        if self.optimizer_in_backward and self.cpu_offload:
            raise PerdollarError(
                "an offloaded optimizer steps on the CPU after the backward, not inside it",
                "drop +optimizer-in-backward or +offload",
            )
        if self.virtual_stages > 1 and self.pipeline_parallel < 2:
            raise PerdollarError(
                "virtual pipeline stages interleave a pipeline: they need pipeline parallel 2 or more",
                "add --pipeline-parallel or drop --virtual-stages",
            )
        for name in (
            "tensor_parallel",
            "pipeline_parallel",
            "virtual_stages",
            "context_parallel",
            "expert_parallel",
            "micro_batch",
            "gradient_accumulation",
            "lora_rank",
        ):
            if getattr(self, name) < 1:
                raise PerdollarError(
                    f"{name.replace('_', ' ')} must be at least 1", "give a positive integer"
                )

    @property
    def resolved_framework(self) -> Framework:
        """The framework the plan runs under: the one named, or its mode's default."""
        return framework_for(self.framework, self.finetune)

    @property
    def resolved_optimizer(self) -> Optimizer:
        """The optimizer the plan steps with: the one named, or AdamW."""
        return optimizer_for(self.optimizer)

    def pipeline_inside_host(self, nodes: int) -> bool:
        """Whether the pipeline's stages sit inside each host (over its NVLink) rather than one
        stage per group of hosts: when the hosts cannot be split evenly among the stages."""
        return self.pipeline_parallel > 1 and nodes % self.pipeline_parallel != 0

    def hosts_per_stage(self, nodes: int) -> int:
        """Hosts one pipeline stage's data-parallel group spans."""
        return nodes if self.pipeline_inside_host(nodes) else max(nodes // self.pipeline_parallel, 1)

    def data_parallel_in_host(self, gpus_per_node: int, nodes: int) -> int:
        """Data-parallel ranks of one stage inside one host."""
        stages_here = self.pipeline_parallel if self.pipeline_inside_host(nodes) else 1
        ranks = max(gpus_per_node // (self.tensor_parallel * stages_here), 1)
        return min(self.gradient_group_size(gpus_per_node * nodes), ranks)

    def data_parallel_size(self, gpus: int) -> int:
        """Replicas (or shards) of the model over ``gpus`` GPUs, each taking whole sequences."""
        return max(gpus // (self.tensor_parallel * self.pipeline_parallel * self.context_parallel), 1)

    def gradient_group_size(self, gpus: int) -> int:
        """Ranks holding the same weights, whose gradients are reduced (and states sharded) together:
        data parallel × context parallel."""
        return self.data_parallel_size(gpus) * self.context_parallel

    def text(self, gpus: int | None = None, *, framework: bool = True) -> str:
        """Readable: "FSDP full-shard over 16 GPUs, activation checkpointing, micro-batch 4, …"
        (``framework``: ending with the framework it runs under)."""
        head = _STRATEGY_TEXT[self.strategy]
        if gpus is not None:
            head += f" over {gpus} GPU{'s' if gpus != 1 else ''}"
        parts = [head]
        if self.tensor_parallel > 1:
            blocking = " (blocking communication)" if self.tensor_parallel_comm == "blocking" else ""
            parts.append(f"tensor parallel {self.tensor_parallel}{blocking}")
        if self.pipeline_parallel > 1:
            interleaved = f", interleaved ×{self.virtual_stages}" if self.virtual_stages > 1 else ""
            parts.append(f"pipeline parallel {self.pipeline_parallel} (1F1B{interleaved})")
        if self.context_parallel > 1:
            parts.append(f"context parallel {self.context_parallel}")
        if self.expert_parallel > 1:
            how = [("DeepEP dispatch" if self.expert_dispatch == "deepep" else ""),
                   ("exchange overlapped" if self.expert_parallel_comm == "overlapped" else "")]  # fmt: skip
            detail = ", ".join(h for h in how if h)
            parts.append(f"expert parallel {self.expert_parallel}" + (f" ({detail})" if detail else ""))
        if self.finetune == "lora":
            parts.append(f"LoRA rank {self.lora_rank}")
        elif self.finetune == "qlora":
            parts.append(f"QLoRA rank {self.lora_rank} (4-bit base weights)")
        if self.activation_checkpointing:
            parts.append("activation checkpointing")
        if self.selective_checkpointing:
            parts.append("selective activation checkpointing")
        if self.cpu_offload:
            parts.append("optimizer offloaded to CPU")
        if self.optimizer_in_backward:
            parts.append("optimizer stepped in the backward")
        if self.resolved_optimizer.name != DEFAULT_OPTIMIZER:
            parts.append(f"optimizer {self.resolved_optimizer.title}")
        if self.backward_prefetch == "post":
            parts.append("backward gathers after the gradients (BACKWARD_POST)")
        if self.data_parallel_comm == "blocking":
            parts.append("gradients reduced after the backward (blocking)")
        parts.append(f"micro-batch {self.micro_batch}")
        parts.append(f"accumulation {self.gradient_accumulation}")
        if framework:
            parts.append(f"under {self.resolved_framework.title}")
        return ", ".join(parts)

    def token(self) -> str:
        """Compact and parseable back by :func:`parse_plan`: "fsdp+ac,mb4,ga8", "hsdp,tp8,pp2"."""
        head = (
            self.strategy
            + ("+ac" if self.activation_checkpointing else "")
            + ("+sac" if self.selective_checkpointing else "")
            + ("+offload" if self.cpu_offload else "")
            + ("+backward-post" if self.backward_prefetch == "post" else "")
            + ("+blocking" if self.data_parallel_comm == "blocking" else "")
            + ("+optimizer-in-backward" if self.optimizer_in_backward else "")
        )
        parts = [head]
        if self.tensor_parallel > 1:
            blocking = "-blocking" if self.tensor_parallel_comm == "blocking" else ""
            parts.append(f"tp{self.tensor_parallel}{blocking}")
        if self.pipeline_parallel > 1:
            parts.append(f"pp{self.pipeline_parallel}")
        if self.virtual_stages > 1:
            parts.append(f"vp{self.virtual_stages}")
        if self.context_parallel > 1:
            parts.append(f"cp{self.context_parallel}")
        if self.expert_parallel > 1:
            deepep = "-deepep" if self.expert_dispatch == "deepep" else ""
            overlapped = "-overlapped" if self.expert_parallel_comm == "overlapped" else ""
            parts.append(f"ep{self.expert_parallel}{deepep}{overlapped}")
        if self.finetune != "full":
            parts.append(f"{self.finetune}{self.lora_rank}")
        if self.micro_batch != 1:
            parts.append(f"mb{self.micro_batch}")
        if self.gradient_accumulation != 1:
            parts.append(f"ga{self.gradient_accumulation}")
        # Fine-tuning runs name their framework always (it sets their speed and memory most); full
        # training only when one was chosen, so that its default tokens read as before.
        if self.framework or self.finetune != "full":
            parts.append(self.resolved_framework.name)
        if self.resolved_optimizer.name != DEFAULT_OPTIMIZER:  # AdamW's tokens read as before
            parts.append(self.resolved_optimizer.name)
        return ",".join(parts)

    def to_dict(self) -> dict[str, object]:
        return {
            "strategy": self.strategy,
            "tensor_parallel": self.tensor_parallel,
            "tensor_parallel_comm": self.tensor_parallel_comm,
            "pipeline_parallel": self.pipeline_parallel,
            "activation_checkpointing": self.activation_checkpointing,
            "selective_checkpointing": self.selective_checkpointing,
            "micro_batch": self.micro_batch,
            "gradient_accumulation": self.gradient_accumulation,
            "cpu_offload": self.cpu_offload,
            "backward_prefetch": self.backward_prefetch,
            "data_parallel_comm": self.data_parallel_comm,
            "finetune": self.finetune,
            "lora_rank": self.lora_rank,
            "virtual_stages": self.virtual_stages,
            "context_parallel": self.context_parallel,
            "expert_parallel": self.expert_parallel,
            "expert_dispatch": self.expert_dispatch,
            "expert_parallel_comm": self.expert_parallel_comm,
            "framework": self.resolved_framework.name,
            "compiled": self.resolved_framework.compiled,
            "optimizer": self.resolved_optimizer.name,
            "optimizer_in_backward": self.optimizer_in_backward,
            "token": self.token(),
        }


_PART = re.compile(r"^(tp|pp|vp|cp|ep|mb|ga|lora|qlora)(\d+)((?:-[a-z]+)*)$")
_SUFFIXES = {"tp": ("-blocking",), "ep": ("-deepep", "-overlapped", "-deepep-overlapped")}


def parse_plan(token: str) -> TrainingPlan:
    """The plan a :meth:`TrainingPlan.token` names; one-line error for anything else."""
    fix = (
        "write it as STRATEGY[+ac|+sac][+offload][+backward-post|+blocking][+optimizer-in-backward]"
        "[,tpN[-blocking]][,ppN]"
        "[,vpN][,cpN][,epN[-deepep][-overlapped]][,loraR|qloraR][,mbN][,gaN]"
        "[,FRAMEWORK[+compile|+eager]][,OPTIMIZER], e.g. "
        "fsdp+ac,mb4 or ddp,qlora16,unsloth,paged-adamw-8bit"
    )
    parts = [p.strip().lower() for p in token.replace(" ", "").split(",") if p.strip()]
    if not parts:
        raise PerdollarError("empty training plan", fix)
    head = parts[0].split("+")
    flags = set(head[1:])
    unknown = flags - {"ac", "sac", "offload", "backward-post", "blocking", "optimizer-in-backward"}
    if head[0] not in STRATEGIES or unknown:
        raise PerdollarError(f"cannot read the training plan {token!r}", fix)
    values: dict[str, object] = {
        "strategy": head[0],
        "activation_checkpointing": "ac" in flags,
        "selective_checkpointing": "sac" in flags,
        "cpu_offload": "offload" in flags,
        "backward_prefetch": "post" if "backward-post" in flags else "pre",
        "data_parallel_comm": "blocking" if "blocking" in flags else "overlapped",
        "optimizer_in_backward": "optimizer-in-backward" in flags,
    }
    names = {
        "tp": "tensor_parallel",
        "pp": "pipeline_parallel",
        "mb": "micro_batch",
        "ga": "gradient_accumulation",
        "vp": "virtual_stages",
        "cp": "context_parallel",
        "ep": "expert_parallel",
    }
    for part in parts[1:]:
        if part.split("+")[0] in FRAMEWORKS or part.startswith("+"):
            values["framework"] = part
            continue
        if part in OPTIMIZERS:
            values["optimizer"] = part
            continue
        match = _PART.match(part)
        suffix = match.group(3) if match else ""
        if match is None or (suffix and suffix not in _SUFFIXES.get(match.group(1), ())):
            raise PerdollarError(f"cannot read {part!r} in the training plan {token!r}", fix)
        key, number = match.group(1), int(match.group(2))
        if key == "tp" and suffix:
            values["tensor_parallel_comm"] = "blocking"
        if "deepep" in suffix:
            values["expert_dispatch"] = "deepep"
        if "overlapped" in suffix:
            values["expert_parallel_comm"] = "overlapped"
        if key in ("lora", "qlora"):
            values["finetune"], values["lora_rank"] = key, number
        else:
            values[names[key]] = number
    return TrainingPlan(**values)  # type: ignore[arg-type]
