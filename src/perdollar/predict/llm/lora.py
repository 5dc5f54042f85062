"""LoRA's own work in a layer: the adapter products at rank r and what a framework runs around them.

Every adapted matrix W (fan-in d, fan-out e) gains y += s·B(A(drop(x))) with A: d→r, B: r→e. Per
token the adapter costs 2r(d + e) FLOPs forward and 4r(d + e) backward (the gradients of A and
B, and the input gradient through both): 6r(d + e) in all, next to the frozen base's 4de (its
forward and its input gradient; no weight gradient). These products are thin (one side r wide):
the roofline prices them at the low rate such GEMMs reach.

Under PEFT's modules (:mod:`perdollar.predict.llm.frameworks`) each adapted matrix also runs, per
token, over its whole input: a cast to float32 adapters' precision and back, a dropout (a copy and
a one-byte mask), and over its output a scaling and the addition to the base's output; the
backward mirrors them and adds the adapter's input gradient into the base's. What it keeps for the
backward: the dropout's mask and the bf16 input of A (each matrix its own, since each has its own
dropout) and A's r-wide output. Unsloth's fused autograd functions keep each distinct input once
(the attention's input for q, k, v; the MLP's for gate and up) and run no elementwise kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.predict.llm.frameworks import Framework
from perdollar.profile.model import OperatorRecord, Phase
from perdollar.workload.llm.architecture import DecoderArchitecture

PRODUCT_BYTES = 2.0  # the adapter products run in bf16 under autocast whatever the adapters' storage


@dataclass(frozen=True, slots=True)
class AdaptedMatrix:
    """One adapted matrix of a layer: its fan-in and fan-out, how many a token passes through (the
    routed experts it is sent to), and which input it reads (matrices reading one input share it)."""

    fan_in: int
    fan_out: int
    per_token: float
    reads: str


def adapted_matrices(
    arch: DecoderArchitecture, fused_projections: bool = False, targets: str = "all"
) -> tuple[AdaptedMatrix, ...]:
    """The attention and MLP matrices LoRA adapts in an average layer, as a token passes them.

    ``fused_projections``: the framework's layer holds q, k and v as one matrix and the MLP's
    gate and up as one (Megatron-Core's ``linear_qkv`` and ``linear_fc1``): one adapter each.
    ``targets``: ``all`` of them, or only the ``attention-qkv`` projections."""
    hidden, q_out, kv = arch.hidden_size, arch.num_attention_heads * arch.head_dim, arch.kv_dim
    projections = (
        [AdaptedMatrix(hidden, q_out + 2 * kv, 1.0, "attention")]
        if fused_projections
        else [
            AdaptedMatrix(hidden, q_out, 1.0, "attention"),
            AdaptedMatrix(hidden, kv, 1.0, "attention"),
            AdaptedMatrix(hidden, kv, 1.0, "attention"),
        ]
    )
    if targets == "attention-qkv":
        return tuple(projections)
    matrices = [*projections, AdaptedMatrix(q_out, hidden, 1.0, "attention-output")]
    moe_share = arch.moe_layers / arch.num_layers if arch.is_moe else 0.0
    widths = [(arch.experts_per_token * moe_share, arch.intermediate_size)]
    if arch.is_moe and arch.shared_intermediate_size:
        widths.append((moe_share, arch.shared_intermediate_size))
    widths.append((1.0 - moe_share, arch.dense_intermediate_size or arch.intermediate_size))
    for passes, width in widths:
        if passes <= 0:
            continue
        ups = 2 if arch.gated_mlp else 1
        if fused_projections:
            matrices.append(AdaptedMatrix(hidden, ups * width, passes, f"mlp-{width}"))
        else:
            matrices += [AdaptedMatrix(hidden, width, passes, f"mlp-{width}") for _ in range(ups)]
        matrices.append(AdaptedMatrix(width, hidden, passes, f"mlp-down-{width}"))
    return tuple(matrices)


def adapter_flops_per_token(arch: DecoderArchitecture, rank: int) -> float:
    """Forward and backward FLOPs of one layer's adapters for one token: 6r(d + e) per matrix."""
    return sum(6.0 * rank * (m.fan_in + m.fan_out) * m.per_token for m in adapted_matrices(arch))


def _gemm(name: str, phase: Phase, m: float, n: int, k: int, count: float) -> OperatorRecord:
    rows = max(round(m), 1)
    return OperatorRecord(
        name=name, op_class="matmul", phase=phase,
        flops=2.0 * rows * n * k,
        bytes_read=PRODUCT_BYTES * (rows * k + k * n),
        bytes_written=PRODUCT_BYTES * rows * n,
        dtype="bf16", count=max(round(count), 1), gemm_mnk=(rows, n, k),
    )  # fmt: skip


def _chain(name: str, phase: Phase, elements: float, read: float, written: float) -> OperatorRecord:
    return OperatorRecord(
        name=name, op_class="elementwise", phase=phase,
        flops=elements, bytes_read=read * elements, bytes_written=written * elements, dtype="bf16",
    )  # fmt: skip


def _around_ops(matrix: AdaptedMatrix, tokens: float, framework: Framework) -> list[OperatorRecord]:
    """PEFT-style modules' elementwise kernels around one adapted matrix (fused LoRA runs none)."""
    a = framework.adapter_bytes
    inputs, outputs = tokens * matrix.per_token * matrix.fan_in, tokens * matrix.per_token * matrix.fan_out
    ops = []
    upcast = a > PRODUCT_BYTES
    if upcast:  # the input cast to the adapters' precision and, by autocast, back for the product
        ops += [_chain("lora.cast_in", "forward", inputs, PRODUCT_BYTES, a),
                _chain("lora.cast_product", "forward", inputs, a, PRODUCT_BYTES),
                _chain("lora.cast_in.grad", "backward", inputs, PRODUCT_BYTES, a),
                _chain("lora.cast_product.grad", "backward", inputs, a, PRODUCT_BYTES)]  # fmt: skip
    if framework.adapter_dropout:
        ops += [_chain("lora.dropout", "forward", inputs, a, a + 1.0),
                _chain("lora.dropout.grad", "backward", inputs, a + 1.0, a)]  # fmt: skip
    ops += [
        _chain("lora.scale", "forward", outputs, PRODUCT_BYTES, PRODUCT_BYTES),
        _chain("lora.add", "forward", outputs, 2 * PRODUCT_BYTES, PRODUCT_BYTES),
        _chain("lora.scale.grad", "backward", outputs, PRODUCT_BYTES, PRODUCT_BYTES),
        _chain("lora.input_grad.add", "backward", inputs, 2 * PRODUCT_BYTES, PRODUCT_BYTES),
    ]
    return ops


def adapter_ops(
    arch: DecoderArchitecture, tokens: float, rank: int, framework: Framework
) -> tuple[OperatorRecord, ...]:
    """One layer's adapter operators for a micro-batch of ``tokens`` tokens, forward and backward."""
    ops: list[OperatorRecord] = []
    for matrix in adapted_matrices(arch, framework.fused_projections, framework.lora_targets):
        rows = tokens * matrix.per_token
        d, e = matrix.fan_in, matrix.fan_out
        ops += [
            _gemm("lora.A", "forward", rows, rank, d, 1),
            _gemm("lora.B", "forward", rows, e, rank, 1),
            _gemm("lora.B.input_grad", "backward", rows, rank, e, 1),
            _gemm("lora.A.input_grad", "backward", rows, d, rank, 1),
            _gemm("lora.B.weight_grad", "backward", rank, e, round(rows), 1),
            _gemm("lora.A.weight_grad", "backward", d, rank, round(rows), 1),
        ]
        if framework.lora != "fused":
            ops += _around_ops(matrix, tokens, framework)
    return tuple(ops)


def adapter_saved_bytes_per_token(arch: DecoderArchitecture, rank: int, framework: Framework) -> float:
    """What one layer's adapters keep for the backward, per token (see the module's docstring)."""
    matrices = adapted_matrices(arch, framework.fused_projections, framework.lora_targets)
    narrow = sum(PRODUCT_BYTES * rank * m.per_token for m in matrices)  # A's outputs, for B's gradient
    separate_inputs = framework.lora != "fused" and (framework.adapter_dropout or framework.adapter_bytes > 2)
    if separate_inputs:
        mask = 1.0 if framework.adapter_dropout else 0.0
        return narrow + sum((PRODUCT_BYTES + mask) * m.fan_in * m.per_token for m in matrices)
    distinct = {m.reads: m.fan_in * m.per_token for m in matrices}
    return narrow + PRODUCT_BYTES * sum(distinct.values())


def dequantise_ops(arch: DecoderArchitecture) -> tuple[OperatorRecord, ...]:
    """QLoRA's NF4 weights unpacked to bf16 before each layer's products, forward and backward."""
    from perdollar.predict.llm.memory import NF4_BYTES_PER_WEIGHT, adapted_params

    weights = adapted_params(arch) / arch.num_layers
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
