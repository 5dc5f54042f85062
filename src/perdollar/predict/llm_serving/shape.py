"""How one serving replica is laid over its GPUs, and what one step of it costs, part by part."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GroupShape:
    """How one replica is laid over GPUs: T-way tensor and P-way pipeline parallel, and for a MoE
    model E-way expert parallel (1: the experts split as tensor parallelism splits them).

    data_parallel_attention: D groups of T ranks running attention on their own sequences beside
    experts sliced over all T·D ranks, with the dense MLPs and shared experts tensor parallel over
    them too (SGLang's --enable-dp-attention, which its server-argument reference describes as
    attention data parallel and the FFN tensor parallel); 1: as expert parallelism implies (E/T
    groups).
    """

    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    data_parallel_attention: int = 1

    @property
    def attention_data_parallel(self) -> int:
        """Groups of T ranks that run attention on their own sequences (E/T when E exceeds T)."""
        if self.data_parallel_attention > 1:
            return self.data_parallel_attention
        return max(self.expert_parallel // self.tensor_parallel, 1)

    @property
    def gpus(self) -> int:
        return self.tensor_parallel * self.attention_data_parallel * self.pipeline_parallel

    @property
    def expert_split(self) -> int:
        """GPUs a routed expert's share is divided by: E ranks of whole experts, or T·D slices, per stage."""
        if self.expert_parallel > 1:
            return self.expert_parallel * self.pipeline_parallel
        return self.tensor_parallel * self.attention_data_parallel * self.pipeline_parallel

    @property
    def dense_split(self) -> int:
        """GPUs the rest of the weights (attention, dense and shared MLPs, embeddings) are divided by."""
        return self.tensor_parallel * self.pipeline_parallel

    @property
    def ffn_split(self) -> int:
        """GPUs the dense MLPs and shared experts are divided by: all T·D ranks beside sliced experts
        under data-parallel attention, else those of the rest of the weights."""
        if self.data_parallel_attention > 1 and self.expert_parallel <= 1:
            return self.expert_split
        return self.dense_split


@dataclass(frozen=True, slots=True)
class StepTime:
    seconds: float
    memory_s: float
    compute_s: float
    communication_s: float
    overhead_s: float
    proposer_s: float = 0.0  # speculative decoding's draft passes before the verify step
    # A MoE model's layers, part by part (their weight reads, multiplies and exchange are also in
    # memory_s, compute_s and communication_s).
    moe_routing_s: float = 0.0
    moe_experts_s: float = 0.0
    moe_experts_memory_s: float = 0.0
    moe_experts_compute_s: float = 0.0
    moe_all_to_all_s: float = 0.0

    @property
    def bottleneck(self) -> str:
        if self.communication_s > max(self.memory_s, self.compute_s):
            return "communication"
        return "memory-bandwidth" if self.memory_s >= self.compute_s else "compute"
