"""FP8 training's linear layers: the GEMMs at the chip's FP8 rate, and what the scaling costs.

``fp8`` is one scale per tensor (Transformer Engine, torchao's ``tensorwise`` recipe): each GEMM
operand is cast once, and the cast fuses with the kernel before it as the other elementwise chains
do. ``fp8-rowwise`` is torchao's ``rowwise`` recipe, a scale per row of each operand, whose extra
kernels torchao's float8 roofline lists one by one (``torchao/testing/training/roofline_utils.py``):

- the backward needs every operand in FP8 scaled along its other axis too, cast from a transposed
  bf16 copy by kernels that fuse with nothing: 5 bytes per element of an activation or a gradient
  (the transposed copy written, then read and cast to one byte) and 7 per weight element (the
  weight read and transposed, then cast);
- the backward's two products accumulate slowly (exactly), a mode in which torchao skips the slow
  row-wise CUTLASS kernel for cuBLAS's per-tensor one and scales the output afterwards
  (``addmm_float8_unwrapped`` in ``torchao/float8/float8_ops.py``): 4 more bytes per output
  element, read and written in bf16, by an elementwise kernel that fuses as the others do.

Tensor parallelism splits a layer's weights, but not every activation: a column-parallel linear
(query, key, value, the MLP's up and gate) reads the whole hidden state on every rank, and a
row-parallel one (attention's output, the MLP's down) gets the whole gradient of its output. The
row-wise recipe all-gathers those in bf16 and casts them whole on every rank; the per-tensor
recipe's casts are counted on each rank's share, as torchtitan casts before its float8 all-gather.
"""

from __future__ import annotations

from dataclasses import replace

from perdollar.profile.model import OperatorRecord, Phase
from perdollar.workload.llm.architecture import DecoderArchitecture

FP8_PRECISIONS = ("fp8", "fp8-rowwise")
TRANSPOSED_CAST_BYTES = {"activation": 5.0, "weight": 7.0}
RESCALE_BYTES = 4.0


def fp8_linears(ops: tuple[OperatorRecord, ...], with_casts: bool = True) -> tuple[OperatorRecord, ...]:
    """A layer's linear GEMMs at FP8, each (``with_casts``) with the cast of its two operands to FP8.

    Attention, norms and the LM head (outside the layer) stay in bf16, as FP8 training recipes
    leave them. The casts read the bf16 operands and write them at one byte per element; scaling
    factors are negligible. Without casts, the recipe's own quantising kernels are added apart
    (:mod:`perdollar.predict.llm.fp8_recipes`).
    """
    out: list[OperatorRecord] = []
    for op in ops:
        if op.op_class != "matmul" or op.gemm_mnk is None:
            out.append(op)
            continue
        operands = op.bytes_read
        out.append(replace(op, dtype="fp8", bytes_read=operands / 2))
        if not with_casts:
            continue
        out.append(OperatorRecord(name="fp8.cast", op_class="elementwise", phase=op.phase, flops=operands / 2,
                                  bytes_read=operands, bytes_written=operands / 2, dtype="bf16",
                                  count=op.count))  # fmt: skip
    return tuple(out)


def layer_linears(arch: DecoderArchitecture) -> list[tuple[int, int, bool, float]]:
    """(in features, out features, column-parallel, tokens' share) of each linear of a layer."""
    attention = [
        (arch.hidden_size, arch.num_attention_heads * arch.head_dim, True, 1.0),
        (arch.hidden_size, arch.kv_dim, True, 1.0),
        (arch.hidden_size, arch.kv_dim, True, 1.0),
        (arch.num_attention_heads * arch.head_dim, arch.hidden_size, False, 1.0),
    ]
    # Each token passes through experts_per_token of the experts.
    share = arch.experts_per_token / arch.num_experts
    ups = 2 if arch.gated_mlp else 1
    mlp = [(arch.hidden_size, arch.intermediate_size, True, share)] * ups
    mlp.append((arch.intermediate_size, arch.hidden_size, False, share))
    shared = []
    if arch.shared_intermediate_size:
        shared = [(arch.hidden_size, arch.shared_intermediate_size, True, 1.0)] * ups
        shared.append((arch.shared_intermediate_size, arch.hidden_size, False, 1.0))
    return attention + mlp * arch.num_experts + shared


def rowwise_ops(
    arch: DecoderArchitecture, tokens: int, tensor_parallel: int, train_base: bool = True
) -> tuple[OperatorRecord, ...]:
    """The row-wise recipe's transposed casts and rescaling for one layer's micro-batch of
    ``tokens`` on one tensor-parallel rank, memory-bound: the transposed casts forward and
    backward, and the backward's rescaling.

    The activations' and gradients' transposed copies feed only the weight gradient's product: a
    frozen base (LoRA) makes none, and only the input gradient's product is rescaled."""
    act, weight = TRANSPOSED_CAST_BYTES["activation"], TRANSPOSED_CAST_BYTES["weight"]
    ways = tensor_parallel
    forward = backward = rescale = 0.0
    kernels = 0
    for fan_in, fan_out, column, share in layer_linears(arch):
        rows = tokens * share
        whole_input = fan_in if column else fan_in / ways  # the input, and its gradient
        whole_output = fan_out / ways if column else fan_out  # the output's gradient
        weights = fan_in * fan_out / ways
        backward += weight * weights
        rescale += RESCALE_BYTES * rows * whole_input
        if train_base:
            forward += act * rows * whole_input
            backward += act * rows * whole_output
            rescale += RESCALE_BYTES * weights
        kernels += 1
    cast_phases: tuple[tuple[Phase, float, int], ...] = (
        ("forward", forward, kernels if train_base else 0),
        ("backward", backward, (3 if train_base else 2) * kernels),
    )
    casts = tuple(
        OperatorRecord(name="fp8.rowwise_transposed_casts", op_class="unclassified", phase=phase, flops=0.0,
                       bytes_read=traffic / 2, bytes_written=traffic / 2, dtype="bf16", count=count)
        for phase, traffic, count in cast_phases
    )  # fmt: skip
    scaling = OperatorRecord(name="fp8.rowwise_rescale", op_class="elementwise", phase="backward",
                             flops=rescale / 4, bytes_read=rescale / 2, bytes_written=rescale / 2,
                             dtype="bf16", count=2 * kernels)  # fmt: skip
    return (*casts, scaling)
