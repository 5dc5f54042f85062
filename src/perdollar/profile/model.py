"""What a workload does, per operator, without running it: the input to prediction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

OperatorClass = Literal[
    "matmul",
    "conv",
    "attention",
    "normalization",
    "elementwise",
    "reduction",
    "embedding",
    "pooling",
    "optimizer",
    "copy",
    "loss",
    "recurrent",
    "unclassified",
]
Phase = Literal["forward", "backward", "optimizer"]


@dataclass(frozen=True, slots=True)
class OperatorRecord:
    """One operator (or a group of identical ones) of a traced step, for the whole batch."""

    name: str  # aten op name, e.g. "aten.mm"
    op_class: OperatorClass
    phase: Phase
    flops: float  # floating-point operations (a multiply-add counts 2)
    bytes_read: float
    bytes_written: float
    dtype: str  # compute dtype: fp32 | tf32 | fp16 | bf16 | …
    count: int = 1  # identical calls folded into this record
    shape: str = ""  # representative shape, e.g. "[128x768]x[768x3072]"
    # For matmul/conv: the (m, n, k) of the GEMM it lowers to, for shape-dependent efficiency.
    gemm_mnk: tuple[int, int, int] | None = None

    @property
    def bytes_moved(self) -> float:
        return self.bytes_read + self.bytes_written


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Accelerator memory of one step, bytes per device (data parallel: no sharding)."""

    weights: float
    gradients: float
    optimizer_state: float
    activations: float  # saved for backward at the profiled batch size
    workspace: float  # transient peak beyond the above (largest temporaries, allocator slack)

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer_state + self.activations + self.workspace


@dataclass(frozen=True, slots=True)
class Profile:
    """A traced step of one workload at one batch size and precision."""

    workload_name: str
    workload_fingerprint: str
    kind: str  # train | inference
    batch_size: int
    precision: str
    sample_unit: str  # images, sequences, samples, tokens
    params: int
    trainable_params: int
    operators: tuple[OperatorRecord, ...]
    memory: MemoryBreakdown
    gradient_bytes: float  # what one data-parallel all-reduce moves per step
    input_bytes_per_sample: float
    unclassified_ops: tuple[str, ...] = field(default_factory=tuple)

    @property
    def flops_per_step(self) -> float:
        return sum(op.flops for op in self.operators)

    @property
    def bytes_per_step(self) -> float:
        return sum(op.bytes_moved for op in self.operators)

    @property
    def flops_per_sample(self) -> float:
        return self.flops_per_step / self.batch_size

    @property
    def bytes_per_sample(self) -> float:
        return self.bytes_per_step / self.batch_size

    @property
    def arithmetic_intensity(self) -> float:
        """FLOPs per byte moved over the whole step."""
        return self.flops_per_step / self.bytes_per_step if self.bytes_per_step else float("inf")
