"""One GPU's share of a micro-batch: the per-operator roofline on the traced layer, split by TP.

Megatron-style tensor parallelism splits every GEMM of a layer (column-parallel QKV and MLP-up,
row-parallel output and MLP-down) and the vocabulary-parallel LM head over its ranks; here every
traced operator's work is divided by the degree and each GEMM's output width with it (so wave
quantisation sees the narrower GEMM). LoRA's rank-r adapter GEMMs (r/hidden of the base work)
are left out; QLoRA adds the dequantisation of each layer's 4-bit weights in every pass.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.predict.params import shipped_model
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import DeviceTable, OperatorTable
from perdollar.profile.llm_trace import layer_trace
from perdollar.profile.model import OperatorRecord
from perdollar.workload.llm.architecture import DecoderArchitecture

# Bytes an AdamW step moves per trained parameter: mixed precision reads the fp32 master weight,
# both moments and the half-precision gradient and writes the three back plus the half-precision copy.
OPTIMIZER_BYTES_PER_PARAM = {"amp-bf16": 28.0, "amp-fp16": 28.0, "bf16": 14.0, "fp16": 14.0}
OPTIMIZER_FLOPS_PER_PARAM = 12.0


@dataclass(frozen=True, slots=True)
class MicroBatchTimes:
    """Seconds of one micro-batch on one GPU (its tensor-parallel share)."""

    layer_forward: float
    layer_backward: float
    other_forward: float  # embedding, final norm, LM head, loss
    other_backward: float
    memory_bound_share: float  # of the device time, the part bound by memory bandwidth


def _split(op: OperatorRecord, ways: int) -> OperatorRecord:
    if ways == 1:
        return op
    mnk = op.gemm_mnk
    if mnk is not None:
        mnk = (mnk[0], max(math.ceil(mnk[1] / ways), 1), mnk[2])
    return replace(
        op,
        flops=op.flops / ways,
        bytes_read=op.bytes_read / ways,
        bytes_written=op.bytes_written / ways,
        gemm_mnk=mnk,
    )


def _dequantise_ops(arch: DecoderArchitecture) -> tuple[OperatorRecord, ...]:
    from perdollar.predict.llm.memory import NF4_BYTES_PER_WEIGHT

    weights = arch.attention_params_per_layer + arch.num_experts * arch.expert_params
    return tuple(
        OperatorRecord(
            name="nf4.dequantize",
            op_class="elementwise",
            phase=phase,
            flops=2.0 * weights,
            bytes_read=NF4_BYTES_PER_WEIGHT * weights,
            bytes_written=2.0 * weights,
            dtype="bf16",
            count=7,
        )
        for phase in ("forward", "backward")
    )


def _seconds(
    ops: tuple[OperatorRecord, ...], accelerator: Accelerator, gemm_efficiency: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds per op, memory-bound seconds per op, backward mask)."""
    params = shipped_model().params
    table = OperatorTable.from_operators(ops, params.gemm_tile)
    times = operator_times(DeviceTable.from_accelerators([accelerator]), table, params)
    compute = np.where(table.is_gemm, times.compute[0] / gemm_efficiency, times.compute[0])
    bound = np.maximum(compute, times.memory[0])
    memory_bound = np.where(times.memory[0] > compute, bound, 0.0)
    return bound + times.overhead, memory_bound, table.is_backward


@functools.lru_cache(maxsize=8192)
def micro_batch_times(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    *,
    micro_batch: int,
    seq_len: int,
    precision: str,
    tensor_parallel: int,
    finetune: str,
    gemm_efficiency: float = 1.0,
) -> MicroBatchTimes:
    trace = layer_trace(arch, micro_batch, seq_len, precision, train_base=finetune == "full")
    layer_ops = tuple(_split(op, tensor_parallel) for op in trace.layer_ops)
    if finetune == "qlora":
        layer_ops += tuple(_split(op, tensor_parallel) for op in _dequantise_ops(arch))
    other_ops = tuple(_split(op, tensor_parallel) for op in trace.other_ops)
    layer, layer_memory, layer_back = _seconds(layer_ops, accelerator, gemm_efficiency)
    other, other_memory, other_back = _seconds(other_ops, accelerator, gemm_efficiency)
    total = arch.num_layers * layer.sum() + other.sum()
    memory = arch.num_layers * layer_memory.sum() + other_memory.sum()
    return MicroBatchTimes(
        layer_forward=float(layer[~layer_back].sum()),
        layer_backward=float(layer[layer_back].sum()),
        other_forward=float(other[~other_back].sum()),
        other_backward=float(other[other_back].sum()),
        memory_bound_share=float(memory / total) if total > 0 else 0.0,
    )


@functools.lru_cache(maxsize=8192)
def optimizer_seconds(accelerator: Accelerator, trained_params: float, precision: str) -> float:
    """An AdamW step over ``trained_params`` on one GPU (memory-bound elementwise kernels)."""
    if trained_params <= 0:
        return 0.0
    per_param = OPTIMIZER_BYTES_PER_PARAM.get(precision, 28.0)
    op = OperatorRecord(
        name="adamw",
        op_class="optimizer",
        phase="optimizer",
        flops=OPTIMIZER_FLOPS_PER_PARAM * trained_params,
        bytes_read=per_param / 2 * trained_params,
        bytes_written=per_param / 2 * trained_params,
        dtype="fp32",
        count=4,
    )
    seconds, _, _ = _seconds((op,), accelerator, 1.0)
    return float(seconds.sum())
