"""Rows of ``published_llm_training.csv`` as runs to predict: architecture, accelerator and plan.

A row's ``config`` names a bundled config (``workload/llm/configs/NAME.json``) or spells a
GPT-style one inline (``gpt2:n_embd=2048,n_layer=24,…``) for the sizes papers make up. GPU names
go through the catalog's aliases. A blank micro-batch (the source does not state it) is one
sequence per step under pipeline parallelism and the whole local batch otherwise, with the
accumulation that makes up the global batch. Interleaved pipelines run their virtual stages,
context-parallel rows their ring, and each row runs under the framework its source names
(:func:`framework_of`).

GPUs that differ from the catalog's part: torchtitan's H100 tables ran on Meta's Grand Teton
hosts, whose H100s carry 96 GB of HBM2e at 2.4 TB/s and a 500 W power limit (the source's
Hardware section); those rows keep the catalog's H100-SXM5 compute and take the source's memory,
bandwidth and power (``VARIANTS``, matched on the row's flag). The source says the chip's peak
lies between the SXM's and the NVL's and that it does not know it; the roofline's own power law
decides what 500 W costs.

Networks: a row whose source names InfiniBand, RoCE or RDMA runs its cross-host collectives over
RDMA. Where the source does not state the network (LLM Foundry's H100 tables, Megatron-Core's H100
weak scaling), the row assumes the fabric of NVIDIA's reference DGX H100 system, 8 × 400 Gb/s
InfiniBand NDR (3,200 Gb/s per host; NVIDIA DGX H100 datasheet), on which such runs are made.
"""

from __future__ import annotations

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perdollar.catalog import load as load_catalog
from perdollar.workload.llm import DecoderArchitecture, from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"
PRECISIONS = {"amp": "amp-bf16", "bf16": "amp-bf16", "fp16": "amp-fp16", "fp8": "fp8"}
RDMA_WORDS = ("infiniband", "roce", "rdma", "efa")
REFERENCE_FABRIC_GBPS = 3200.0  # DGX H100: 8 × 400 Gb/s InfiniBand NDR
VARIANTS: dict[str, dict[str, Any]] = {
    "96GB HBM2e at 500 W": {
        "memory_gib": 96.0,
        "memory_bandwidth_gbps": 2400.0,
        "memory_type": "HBM2e",
        "tdp_w": 500.0,
    },
}


@dataclass(frozen=True)
class PublishedRun:
    index: int
    collection: str
    holdout: bool
    model: str
    architecture: DecoderArchitecture
    accelerator: Any
    gpu_count: int
    nodes: int
    gpus_per_node: int
    network_gbps_per_node: float | None
    rdma: bool  # cross-host collectives over InfiniBand/RoCE/EFA rather than TCP
    precision: str
    seq_len: int
    global_batch: int
    strategy: str
    tensor_parallel: int
    pipeline_parallel: int
    micro_batch: int
    gradient_accumulation: int
    activation_checkpointing: bool
    selective_checkpointing: bool  # the source says "selective" (PyTorch's per-operator policy)
    finetune: str  # full | lora
    attention_kernel: str  # flash2 | native (see attention_kernel_of)
    tensor_parallel_comm: str  # overlapped | blocking (see tensor_parallel_comm_of)
    backward_prefetch: str  # pre | post (see backward_prefetch_of)
    data_parallel_comm: str  # overlapped | blocking (see data_parallel_comm_of)
    virtual_pipeline: int  # interleaved 1F1B model chunks per GPU
    context_parallel: int
    framework: str  # a name of perdollar.predict.llm.frameworks
    tokens_per_second: float  # published, total over all GPUs
    notes: str

    def plan(self) -> Any:
        """The row's training plan, as perdollar's planner would write it."""
        from perdollar.predict.llm import TrainingPlan

        return TrainingPlan(
            strategy=self.strategy,
            tensor_parallel=self.tensor_parallel,
            pipeline_parallel=self.pipeline_parallel,
            activation_checkpointing=self.activation_checkpointing,
            selective_checkpointing=self.selective_checkpointing,
            micro_batch=self.micro_batch,
            gradient_accumulation=self.gradient_accumulation,
            finetune=self.finetune,
            tensor_parallel_comm=self.tensor_parallel_comm,
            backward_prefetch=self.backward_prefetch,
            data_parallel_comm=self.data_parallel_comm,
            virtual_stages=self.virtual_pipeline,
            context_parallel=self.context_parallel,
            framework=self.framework,
        )

    def describe(self) -> str:
        return (
            f"{self.collection}: {self.model} on {self.gpu_count}x {self.accelerator.key}, "
            f"seq {self.seq_len}, {self.precision}, {self.plan().token()}, "
            f"published {self.tokens_per_second:,.0f} tokens/s"
        )


def architecture_of(config: str) -> DecoderArchitecture:
    if ":" in config:
        model_type, _, pairs = config.partition(":")
        document: dict[str, Any] = {"model_type": model_type}
        for pair in pairs.split(","):
            key, _, value = pair.partition("=")
            document[key] = {"true": True, "false": False}.get(
                value, int(value) if value.isdigit() else value
            )
        return from_hf_config(document, name=config)
    return from_hf_config(load_config_file(CONFIGS / f"{config}.json"), name=config)


def attention_kernel_of(framework: str) -> str:
    """Megatron-Core (alone or under NeMo) runs attention through Transformer Engine, whose fused
    attention on Hopper is cuDNN's; Megatron-LM's 2019 and 2021 tables predate FlashAttention
    (2022): their attention is two batched GEMMs around a fused softmax, the scores through
    memory; the PyTorch trainers (LLM Foundry's flash-attn 2, torchtitan's and fms-fsdp's SDPA)
    run FlashAttention-2's kernels."""
    if "Megatron-Core" in framework:
        return "native"
    return "unfused" if framework.startswith("Megatron-LM (") else "flash2"


def framework_of(framework: str) -> str:
    """The framework record a source's trainer is: NeMo (its LoRA adapters too), Megatron-LM and
    -Core, LLM Foundry on Composer, torchtitan; fms-fsdp (FSDP, torch.compile, SDPA) as torchtitan."""
    for words, name in (("NeMo", "nemo"), ("Megatron", "megatron"), ("Composer", "composer")):
        if words in framework:
            return name
    return "torchtitan"


def tensor_parallel_comm_of(framework: str, notes: str) -> str:
    """Whether the source's tensor-parallel collectives block the matrix products they feed.

    Megatron-LM's 2019 and 2021 tables predate the overlap, which came later with Transformer
    Engine (``--tp-comm-overlap``): their all-reduces run between the matrix products. torchtitan
    runs plain ("vanilla") TP unless the row says async TP. Megatron-Core's H100 tables ran with
    ``--tp-comm-overlap`` (its README); NeMo runs Megatron-Core's Transformer Engine layers and its
    table does not say otherwise, so it is taken as overlapped too."""
    if framework.startswith("Megatron-LM ("):
        return "blocking"
    if framework.startswith("torchtitan") and "async" not in notes.lower():
        return "blocking"
    return "overlapped"


def accelerator_of(catalog: Any, gpu: str, flag: str) -> Any:
    """The catalog's chip, with the memory and power the source states where its part differs."""
    accelerator = catalog.accelerator(gpu)
    for phrase, changes in VARIANTS.items():
        if phrase in flag:
            return dataclasses.replace(accelerator, **changes)
    return accelerator


def backward_prefetch_of(framework: str, strategy: str) -> str:
    """When FSDP issues the backward's weight gather. LLM Foundry runs Composer, whose FSDP
    defaults to ``BACKWARD_POST`` (``composer/utils/parallelism.py``; so since 2022), and its
    tables do not say otherwise; fms-fsdp leaves PyTorch's default, ``BACKWARD_PRE``; torchtitan's
    FSDP2 prefetches the backward's gather as ``BACKWARD_PRE`` does. Only full-shard strategies
    gather in the backward."""
    if framework.startswith("LLM Foundry") and strategy in ("fsdp", "hsdp"):
        return "post"
    return "pre"


def data_parallel_comm_of(framework: str) -> str:
    """Whether the source's gradient reduction waits for the whole backward. Megatron-LM's own
    DDP (``--DDP-impl local``, the default) all-reduced the gradients in one call after the
    backward in its 2019 release (``pretrain_gpt2.py`` at abe36e2: its overlapping hooks are
    commented out, ``USE_TORCH_DDP = False``) and still in 2021 (``megatron/training.py``
    ``train_step`` at a8d172b, after ``forward_backward_func``); Megatron-Core added
    ``--overlap-grad-reduce``, which its H100 tables and NeMo use."""
    return "blocking" if framework.startswith("Megatron-LM (") else "overlapped"


def precision_of(precision: str, notes: str) -> str:
    """The row's precision; an FP8 row whose source says row-wise scaling ran torchao's rowwise
    recipe (torchtitan's async-TP table, torchao's own training table)."""
    name = PRECISIONS[precision]
    return "fp8-rowwise" if name == "fp8" and "rowwise" in notes.lower() else name


def _int(text: str, default: int) -> int:
    return int(text) if text.strip() else default


def load_runs(path: Path) -> tuple[list[PublishedRun], dict[str, int]]:
    """The predictable runs of the file, and how many rows were left out for which reason."""
    catalog = load_catalog()
    runs: list[PublishedRun] = []
    unusable: dict[str, int] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for index, row in enumerate(csv.DictReader(handle)):
            gpus = int(row["gpu_count"])
            tp, pp = _int(row["tensor_parallel"], 1), _int(row["pipeline_parallel"], 1)
            cp = _int(row["context_parallel"], 1)
            dp = _int(row["data_parallel"], gpus // (tp * pp * cp))
            global_batch = int(row["global_batch"] or row["batch_size"])
            micro = _int(row["micro_batch"], 1 if pp > 1 else max(1, global_batch // dp))
            accumulation = _int(row["gradient_accumulation"], max(1, global_batch // (micro * dp)))
            per_gpu = row["throughput_scope"] == "per GPU"
            runs.append(
                PublishedRun(
                    index=index,
                    collection=row["collection"],
                    holdout=row["holdout"] == "1",
                    model=row["model"],
                    architecture=architecture_of(row["config"]),
                    accelerator=accelerator_of(catalog, row["gpu"], row["flag"]),
                    gpu_count=gpus,
                    nodes=_int(row["nodes"], max(1, gpus // 8)),
                    gpus_per_node=_int(row["gpus_per_node"], min(gpus, 8)),
                    network_gbps_per_node=float(row["network_gbps_per_node"] or REFERENCE_FABRIC_GBPS),
                    rdma=not row["network_gbps_per_node"]
                    or any(word in row["interconnect"].lower() for word in RDMA_WORDS),
                    precision=precision_of(row["precision"], row["notes"]),
                    seq_len=int(row["seq_len"]),
                    global_batch=global_batch,
                    strategy=row["strategy"],
                    tensor_parallel=tp,
                    pipeline_parallel=pp,
                    micro_batch=micro,
                    gradient_accumulation=accumulation,
                    activation_checkpointing=row["activation_checkpointing"] == "1",
                    selective_checkpointing=row["activation_checkpointing"] != "1"
                    and row["activation_checkpointing_kind"] == "selective",
                    finetune=row["finetune"] or "full",
                    attention_kernel=attention_kernel_of(row["framework"]),
                    tensor_parallel_comm=tensor_parallel_comm_of(row["framework"], row["notes"]),
                    backward_prefetch=backward_prefetch_of(row["framework"], row["strategy"]),
                    data_parallel_comm=data_parallel_comm_of(row["framework"]),
                    virtual_pipeline=_int(row["virtual_pipeline"], 1),
                    context_parallel=cp,
                    framework=framework_of(row["framework"]),
                    tokens_per_second=float(row["throughput"]) * (gpus if per_gpu else 1),
                    notes=row["notes"],
                )
            )
    return runs, unusable
