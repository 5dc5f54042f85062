"""One GPU's share of a micro-batch: the per-operator roofline on the traced layer, split by TP.

Megatron-style tensor parallelism splits every GEMM of a layer (column-parallel QKV and MLP-up,
row-parallel output and MLP-down) and the vocabulary-parallel LM head over its ranks; here every
traced operator's work is divided by the degree and each GEMM's output width with it (so wave
quantisation sees the narrower GEMM). LoRA adds its adapters' thin GEMMs and whatever its
framework runs around them (:mod:`perdollar.predict.llm.lora`); QLoRA adds the dequantisation of
each layer's 4-bit weights in every pass. A framework that runs the model's eager code fuses no
chains, and its host dispatches every operator: a micro-batch takes at least its operator calls
times :data:`~perdollar.predict.llm.frameworks.HOST_SECONDS_PER_OPERATOR`.
Elementwise chains move what a fused kernel moves (the share ``profile.fusion`` derives from the
traced dataflow, for the fitted share of chains fused); attention runs at a published share of
the GEMMs' rate, lowered on chips where FlashAttention-2's instructions cannot reach the peak.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm.causal_attention import causal_block_share
from perdollar.predict.llm.compiled import compiled_adapter_chains, fused_loss
from perdollar.predict.llm.fp8 import FP8_PRECISIONS, fp8_linears, rowwise_ops
from perdollar.predict.llm.fp8_recipes import cast_ops, checked_recipe
from perdollar.predict.llm.frameworks import HOST_SECONDS_PER_OPERATOR, framework_for
from perdollar.predict.llm.lora import adapter_ops, dequantise_ops
from perdollar.predict.llm.optimizers import (
    EIGHT_BIT_WORK_PER_ELEMENT,
    STREAMING_BANDWIDTH_SHARE,
    optimizer_for,
)
from perdollar.predict.params import shipped_model
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import DeviceTable, OperatorTable
from perdollar.profile.llm_trace import layer_trace
from perdollar.profile.model import OperatorRecord
from perdollar.workload.llm.architecture import DecoderArchitecture
from perdollar.workload.llm.workload import ATTENTION_KERNELS

FUSIBLE_CLASSES = frozenset({"elementwise", "copy", "reduction", "normalization"})
# Share of the tensor-core peak that the Ampere-era warp-level MMA instructions reach, by compute
# capability major: FlashAttention-2's kernels use them everywhere, and on Hopper they reach about
# 2/3 of the peak that its warpgroup instructions (cuBLAS, cuDNN, FlashAttention-3) reach
# (Shah et al. 2024, "FlashAttention-3", section 1).
WARP_MMA_SHARE = {"9": 2 / 3}


# Bytes an unfused 16-bit attention moves per element of its score matrix. Forward: the first
# product writes the scores, a fused scale-mask-softmax reads them and writes the probabilities,
# the second product reads those. Backward: the probabilities' gradient written, softmax's
# backward reading it with the probabilities and writing the scores' gradient, which the two
# products for dQ and dK read, and dV's product reading the probabilities.
UNFUSED_SCORE_BYTES = {"forward": 8.0, "backward": 14.0}
# The traced attention's FLOPs per score element per head dimension (PyTorch's flop counter:
# two products forward, five backward, recomputing the scores).
ATTENTION_FLOPS_PER_SCORE = {"forward": 4.0, "backward": 10.0}


# Share of the memory bandwidth the NF4 dequantisation of QLoRA's frozen weights reaches, as the
# frameworks run it (bitsandbytes' dequantize_4bit before each matrix product of MatMul4Bit, in
# the forward, the recompute and again in the backward), a kernel of its own that no fusion of the
# chains around it shrinks. Fitted on perdollar's own QLoRA steps under PEFT and bitsandbytes 0.50
# on one H100 and one H200 (benchmarks/gpu_lora_steps_*.csv; benchmarks/fit_nf4_dequantise.py):
# the full bandwidth, the fit's bound. An older published comparison on an A100 (Raschka 2023,
# QLoRA 39% slower than LoRA for Llama 2 7B) is not reproduced: at its shape this gives 13%.
NF4_DEQUANTISE_BANDWIDTH_SHARE = 1.0


def warp_mma_share(accelerator: Accelerator) -> float:
    major = (accelerator.compute_capability or "").split(".")[0]
    return WARP_MMA_SHARE.get(major, 1.0)


def _unfused_attention(ops: tuple[OperatorRecord, ...], head_dim: int) -> tuple[OperatorRecord, ...]:
    """Attention as eager code runs it: its products as batched GEMMs (cuBLAS, at the GEMMs' rate)
    and its score matrix through memory, as attention ran before FlashAttention (Megatron-LM to
    2022) and as Hugging Face's ``attn_implementation="eager"`` runs it."""
    out: list[OperatorRecord] = []
    for op in ops:
        if op.op_class != "attention" or op.phase not in UNFUSED_SCORE_BYTES:
            out.append(op)
            continue
        scores = op.flops / (ATTENTION_FLOPS_PER_SCORE[op.phase] * head_dim)
        traffic = UNFUSED_SCORE_BYTES[op.phase] * scores
        out.append(replace(op, op_class="matmul", gemm_mnk=None))
        out.append(
            OperatorRecord(
                name="attention.scores",
                op_class="attention",
                phase=op.phase,
                flops=0.0,
                bytes_read=traffic / 2,
                bytes_written=traffic / 2,
                dtype=op.dtype,
                count=op.count,
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class MicroBatchTimes:
    """Seconds of one micro-batch on one GPU (its tensor-parallel share)."""

    layer_forward: float
    layer_backward: float
    other_forward: float  # embedding, final norm, LM head, loss
    other_backward: float
    memory_bound_share: float  # of the device time, the part bound by memory bandwidth
    # What selective checkpointing recomputes of a layer's forward: all but attention and half the
    # matrix products (PyTorch's per-operator policy saves every other one).
    layer_selective_recompute: float = 0.0
    # Of a layer's forward and backward, the FP8 recipe's quantising kernels (fp8 only).
    layer_fp8_casts_forward: float = 0.0
    layer_fp8_casts_backward: float = 0.0


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


def _seconds(
    ops: tuple[OperatorRecord, ...],
    accelerator: Accelerator,
    gemm_efficiency: float,
    chain_traffic_share: float = 1.0,
    attention_efficiency: float = 1.0,
    fp8_efficiency: float = 1.0,
    attention_kernel: str = "flash2",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds per op, memory-bound seconds per op, backward mask).

    ``attention_efficiency`` scales the fused attention kernels' rate against the GEMMs' (training
    runs their slower backward too); ``chain_traffic_share`` is the share of the traced elementwise,
    copy, reduction and normalization traffic (and kernel launches) the framework leaves (the
    trace is of the model's eager code, one kernel per operator; see :func:`chain_traffic`);
    ``fp8_efficiency`` scales FP8 GEMMs' rate (per-tensor scaling and casts keep them further
    from their peak than bf16 GEMMs).
    """
    params = shipped_model().params
    table = OperatorTable.from_operators(ops, params.gemm_tile)
    times = operator_times(DeviceTable.from_accelerators([accelerator]), table, params)
    compute = np.where(table.is_gemm, times.compute[0] / gemm_efficiency, times.compute[0])
    attention = np.array([op.op_class == "attention" for op in ops], dtype=bool)
    ceiling = warp_mma_share(accelerator) if attention_kernel == "flash2" else 1.0
    # Against the GEMMs' rate: the roofline's own attention factor (fitted on eager vision models)
    # is taken back out.
    attention_rate = attention_efficiency * ceiling / params.attention_relative_efficiency
    compute = np.where(attention, compute / attention_rate, compute)
    fp8 = np.array([op.dtype == "fp8" for op in ops], dtype=bool)
    compute = np.where(fp8, compute / fp8_efficiency, compute)
    fusible = np.array([op.op_class in FUSIBLE_CLASSES for op in ops], dtype=bool)
    memory = np.where(fusible, times.memory[0] * chain_traffic_share, times.memory[0])
    overhead = np.where(fusible, times.overhead * chain_traffic_share, times.overhead)
    bound = np.maximum(compute, memory)
    memory_bound = np.where(memory > compute, bound, 0.0)
    return bound + overhead, memory_bound, table.is_backward


def chain_traffic(fusion: float, fused_share: float) -> float:
    """Share of the eager chains' traffic left when ``fusion`` of them run as fused kernels that
    move ``fused_share`` of their eager bytes (derived from the traced dataflow)."""
    return 1.0 - fusion * (1.0 - fused_share)


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
    fusion: float = 0.0,
    attention_efficiency: float = 1.0,
    fp8_efficiency: float = 1.0,
    attention_kernel: str = "flash2",
    lora_rank: int = 16,
    framework: str = "megatron",
    context_parallel: int = 1,
    micro_batches: int = 1,
) -> MicroBatchTimes:
    """One GPU's share of a micro-batch of ``seq_len``-token sequences (under context parallelism,
    its chunk: attention then looks over ``context_parallel`` times as many keys), one of the
    ``micro_batches`` of a step (a recipe that keeps its FP8 weights quantises them once a step)."""
    if attention_kernel not in ATTENTION_KERNELS:
        raise PerdollarError(
            f"unknown attention kernel {attention_kernel!r}", f"use one of {', '.join(ATTENTION_KERNELS)}"
        )
    trace = layer_trace(arch, micro_batch, seq_len, precision, train_base=finetune == "full")
    runner = framework_for(framework, finetune)
    compiled = runner.compiles_eager_code
    tokens = micro_batch * seq_len
    fp8 = precision in FP8_PRECISIONS
    # Per-tensor fp8 runs its framework's recipe, whose quantising kernels are counted apart;
    # the row-wise recipe keeps its per-product casts and adds its own kernels.
    layer_ops_traced = fp8_linears(trace.layer_ops, with_casts=precision != "fp8") if fp8 else trace.layer_ops
    traced_layer = _split_all(layer_ops_traced, tensor_parallel)
    extra_ops: tuple[OperatorRecord, ...] = ()
    casts = {"forward": 0.0, "backward": 0.0}
    if precision == "fp8":
        recipe = checked_recipe(runner.name, accelerator, runner.compiled)
        for op in cast_ops(recipe, arch, accelerator, tokens, tensor_parallel,
                           train_base=finetune == "full", micro_batches=micro_batches):  # fmt: skip
            casts[op.phase] += streamed_seconds(op, accelerator)
    if precision == "fp8-rowwise":
        extra_ops += rowwise_ops(arch, tokens, tensor_parallel, train_base=finetune == "full")
    adapters: tuple[OperatorRecord, ...] = ()
    if finetune != "full":
        adapters = adapter_ops(arch, tokens, lora_rank, replace(runner, lora="fused") if compiled else runner)
        adapters += compiled_adapter_chains(arch, tokens, runner) if compiled else ()
    quantised = _split_all(dequantise_ops(arch), tensor_parallel) if finetune == "qlora" else ()
    extra_ops += _split_all(adapters, tensor_parallel)
    other_traced = trace.other_ops
    loss_ops: tuple[OperatorRecord, ...] = ()
    if compiled:
        other_traced, loss_ops = fused_loss(other_traced, tokens * arch.vocab_size)
    other_traced, loss_ops = _split_all(other_traced, tensor_parallel), _split_all(loss_ops, tensor_parallel)
    # Each group's chain traffic: the fitted rate over the eager trace; compiling moves the fused
    # share of the model's chains and the fused adapters' and loss's own bytes at that rate.
    layer_rate = chain_traffic(fusion, trace.layer_fused_traffic_share)
    other_rate = chain_traffic(fusion, trace.other_fused_traffic_share)
    layer_groups = (
        (traced_layer, layer_rate * (trace.layer_fused_traffic_share if compiled else 1.0)),
        (extra_ops, layer_rate),
        # Dequantisation is a kernel of its own, whatever fuses around it, at its own achieved rate.
        (quantised, 1.0 / NF4_DEQUANTISE_BANDWIDTH_SHARE),
    )
    other_groups = (
        (other_traced, other_rate * (trace.other_fused_traffic_share if compiled else 1.0)),
        (loss_ops, other_rate),
    )
    rates = (attention_efficiency, fp8_efficiency, attention_kernel)
    layer_ops, layer, layer_memory, layer_back = _grouped_seconds(
        layer_groups,
        accelerator,
        gemm_efficiency,
        rates,
        context_parallel,
        arch.head_dim,
        seq_len * context_parallel,
    )
    other_ops, other, other_memory, other_back = _grouped_seconds(
        other_groups, accelerator, gemm_efficiency, rates, 1, arch.head_dim
    )
    layer_casts = casts["forward"] + casts["backward"]
    total = arch.num_layers * (layer.sum() + layer_casts) + other.sum()
    memory = arch.num_layers * (layer_memory.sum() + layer_casts) + other_memory.sum()
    forward = ~layer_back
    classes = np.array([op.op_class for op in layer_ops])
    share = np.where(classes == "attention", 0.0, np.where(classes == "matmul", 0.5, 1.0))
    host = HOST_SECONDS_PER_OPERATOR if runner.eager_host else 0.0
    return MicroBatchTimes(
        layer_fp8_casts_forward=casts["forward"],
        layer_fp8_casts_backward=casts["backward"],
        layer_selective_recompute=float((layer * share)[forward].sum()),
        layer_forward=max(
            float(layer[~layer_back].sum()) + casts["forward"], host * operator_calls(layer_ops, "forward")
        ),
        layer_backward=max(
            float(layer[layer_back].sum()) + casts["backward"], host * operator_calls(layer_ops, "backward")
        ),
        other_forward=max(float(other[~other_back].sum()), host * operator_calls(other_ops, "forward")),
        other_backward=max(float(other[other_back].sum()), host * operator_calls(other_ops, "backward")),
        memory_bound_share=float(memory / total) if total > 0 else 0.0,
    )


def streamed_seconds(op: OperatorRecord, accelerator: Accelerator) -> float:
    """Seconds of a kernel that streams its bytes once, as the FP8 quantising kernels and the fused
    optimizer step do: at ``STREAMING_BANDWIDTH_SHARE`` of the memory bandwidth, plus the launch of
    each of its ``count`` kernels (the roofline's memory rate is fitted on eager models' many
    small kernels)."""
    streamed = accelerator.memory_bandwidth_gbps * 1e9 * STREAMING_BANDWIDTH_SHARE
    launches = op.count * shipped_model().params.kernel_overhead_s
    return (op.bytes_read + op.bytes_written) / streamed + launches


def _split_all(ops: tuple[OperatorRecord, ...], ways: int) -> tuple[OperatorRecord, ...]:
    return tuple(_split(op, ways) for op in ops)


def _grouped_seconds(
    groups: tuple[tuple[tuple[OperatorRecord, ...], float], ...],
    accelerator: Accelerator,
    gemm_efficiency: float,
    rates: tuple[float, float, str],
    context_parallel: int,
    head_dim: int,
    seq_len: int = 1,
) -> tuple[tuple[OperatorRecord, ...], np.ndarray, np.ndarray, np.ndarray]:
    """(operators, seconds, memory-bound seconds, backward mask) over groups of operators, each
    with its share of chain traffic. Under context parallelism attention looks over
    ``context_parallel`` times as many keys. The native kernels (cuDNN's, Transformer Engine's)
    compute only the causal blocks of the whole sequence (``seq_len``), which context parallelism
    spreads evenly over its ranks. FlashAttention-2's rate (``attention_efficiency``) is the one
    that reproduces the published FlashAttention-2 runs at the whole matrix's FLOPs, up to 65k
    tokens (LLM Foundry's tables), so its kernels keep the traced count."""
    all_ops: list[OperatorRecord] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    causal = causal_block_share(seq_len) if rates[2] == "native" else 1.0
    for ops, traffic in groups:
        if context_parallel > 1 or causal < 1.0:
            ops = tuple(
                replace(op, flops=op.flops * context_parallel * causal) if op.op_class == "attention" else op
                for op in ops
            )
        if rates[2] == "unfused":
            ops = _unfused_attention(ops, head_dim)
        if ops:
            all_ops += ops
            parts.append(_seconds(ops, accelerator, gemm_efficiency, traffic, *rates))
    if not parts:
        empty = np.zeros(0)
        return (), empty, empty, np.zeros(0, dtype=bool)
    seconds, memory, backward = (np.concatenate(column) for column in zip(*parts, strict=True))
    return tuple(all_ops), seconds, memory, backward


def operator_calls(ops: tuple[OperatorRecord, ...], phase: str) -> int:
    """Operator calls of one phase: what an eager framework's host dispatches one by one."""
    return sum(op.count for op in ops if (op.phase == "backward") == (phase == "backward"))


def _alone_seconds(op: OperatorRecord, accelerator: Accelerator) -> float:
    """Seconds of one operator outside any layer (no fusion, the roofline's own rates)."""
    seconds, _, _ = _seconds((op,), accelerator, 1.0)
    return float(seconds.sum())


@functools.lru_cache(maxsize=8192)
def optimizer_seconds(
    accelerator: Accelerator, trained_params: float, precision: str, optimizer: str | None = None
) -> float:
    """An optimizer step (AdamW unless named) over ``trained_params`` on one GPU. A fused or
    multi-tensor step streams what :meth:`Optimizer.step_bytes` says (mixed-precision AdamW: 28
    bytes a parameter) at ``STREAMING_BANDWIDTH_SHARE`` of the memory bandwidth; bitsandbytes'
    8-bit step is bound by its quantisation work instead (see :mod:`.optimizers`)."""
    if trained_params <= 0:
        return 0.0
    chosen = optimizer_for(optimizer)
    per_param = chosen.step_bytes(precision)
    if not chosen.eight_bit:
        streamed = accelerator.memory_bandwidth_gbps * 1e9 * STREAMING_BANDWIDTH_SHARE
        return per_param * trained_params / streamed
    op = OperatorRecord(
        name=chosen.name,
        op_class="optimizer",
        phase="optimizer",
        flops=EIGHT_BIT_WORK_PER_ELEMENT * trained_params,
        bytes_read=per_param / 2 * trained_params,
        bytes_written=per_param / 2 * trained_params,
        dtype="fp32",
        count=4,
    )
    return _alone_seconds(op, accelerator)


@functools.lru_cache(maxsize=8192)
def weight_cast_seconds(accelerator: Accelerator, params: float) -> float:
    """Plain DDP under autocast casts every fp32 weight to half precision in each forward.

    Sharded mixed precision (FSDP, ZeRO) and Megatron compute with half-precision weights and
    skip it; the traced layer is of that case.
    """
    if params <= 0:
        return 0.0
    op = OperatorRecord(
        name="autocast.weight_cast",
        op_class="copy",
        phase="forward",
        flops=0.0,
        bytes_read=4.0 * params,
        bytes_written=2.0 * params,
        dtype="fp32",
        count=1,
    )
    return _alone_seconds(op, accelerator)
