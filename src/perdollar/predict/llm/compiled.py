"""What ``torch.compile`` changes in an eager framework's step: the bytes its fused kernels move.

Inductor fuses pointwise operators into one kernel and a reduction with the pointwise operators
around it; matrix products and attention stay library kernels (cuBLAS, FlashAttention), so a
fused kernel reads what a library kernel (or the step's input) made and writes what a library
kernel reads next, and whatever the backward keeps. Applied to the three parts of a PEFT step:

- the model's own chains (norms, activations, rotary embedding, residual additions): the traced
  dataflow's fused share (``LayerTrace.layer_fused_traffic_share``, :mod:`perdollar.profile.fusion`);
- each adapted matrix (fan-in d, fan-out e): forward, one kernel writes the dropped bf16 input of
  A and the dropout's one-byte mask (the casts to the adapters' float32 and back stay in
  registers), and the scaled addition of B's output joins the consumer's chain, reading B's
  output; backward, the scaled gradient is written for B's products, A's input gradient and the
  mask are read where the input gradients add up, and the dropped input is made again for A's
  weight gradient from the layer input and the mask: 11d + 4e bytes per token against the eager
  modules' 48d + 14e; without dropout (bf16 adapters) A reads the input itself: 2d + 4e;
- the upcast cross-entropy: the forward reads the bf16 logits twice (maximum, then the sum of
  exponentials); the backward fills the float32 one-hot gradient (``nll_loss_backward``'s
  decomposition scatters into zeros, and a scatter ends a fusion), reduces it, and reads it with
  the logits to write the bf16 gradient: 4 + 16 bytes per logit against the eager 44.

The eager step's chains are priced at the rate the shipped fit gives them (``LLMEfficiency.fusion``
over the eager trace); compiled kernels run at that rate and move these bytes. Memory: AOTAutograd
keeps each distinct adapter input once and the masks, and the loss keeps the bf16 logits.
"""

from __future__ import annotations

from dataclasses import replace

from perdollar.predict.llm.frameworks import Framework
from perdollar.predict.llm.lora import PRODUCT_BYTES, AdaptedMatrix, adapted_matrices
from perdollar.profile.model import OperatorRecord, Phase
from perdollar.workload.llm.architecture import DecoderArchitecture

# The eager loss's operators over the whole logits tensor (with its float32 casts, found by size).
LOSS_OPERATORS = frozenset(
    {
        "aten._log_softmax",
        "aten._log_softmax_backward_data",
        "aten.nll_loss_forward",
        "aten.nll_loss_backward",
    }
)
UPCAST_BYTES_PER_LOGIT = 6.0  # the float32 cast of the bf16 logits: read 2, write 4
# (read, written) per logit
FUSED_LOSS_BYTES: dict[Phase, tuple[float, float]] = {"forward": (4.0, 0.0), "backward": (10.0, 6.0)}
FUSED_LOSS_KERNELS: dict[Phase, int] = {"forward": 1, "backward": 3}


def _chain(name: str, phase: Phase, read: float, written: float, count: int = 1) -> OperatorRecord:
    return OperatorRecord(
        name=name, op_class="elementwise", phase=phase,
        flops=read / PRODUCT_BYTES, bytes_read=read, bytes_written=written, dtype="bf16", count=count,
    )  # fmt: skip


def _matrix_chains(matrix: AdaptedMatrix, tokens: float, framework: Framework) -> list[OperatorRecord]:
    rows = tokens * matrix.per_token
    d, e = rows * matrix.fan_in, rows * matrix.fan_out
    if not framework.adapter_dropout:
        return [_chain("lora.compiled.add", "forward", PRODUCT_BYTES * e, 0.0),
                _chain("lora.compiled.scale", "backward", PRODUCT_BYTES * d, PRODUCT_BYTES * e)]  # fmt: skip
    mask = 1.0
    return [
        _chain("lora.compiled.dropout", "forward", 0.0, (PRODUCT_BYTES + mask) * d),
        _chain("lora.compiled.add", "forward", PRODUCT_BYTES * e, 0.0),
        _chain("lora.compiled.grad", "backward", (PRODUCT_BYTES + mask) * d, PRODUCT_BYTES * e),
        _chain("lora.compiled.redrop", "backward", (PRODUCT_BYTES + mask) * d, PRODUCT_BYTES * d),
    ]


def compiled_adapter_chains(
    arch: DecoderArchitecture, tokens: float, framework: Framework
) -> tuple[OperatorRecord, ...]:
    """One layer's adapter chains as Inductor fuses them, for a micro-batch of ``tokens`` tokens."""
    ops: list[OperatorRecord] = []
    for matrix in adapted_matrices(arch, framework.fused_projections, framework.lora_targets):
        ops += _matrix_chains(matrix, tokens, framework)
    return tuple(ops)


def compiled_adapter_saved_bytes_per_token(
    arch: DecoderArchitecture, rank: int, framework: Framework
) -> float:
    """What one layer's adapters keep under compile, per token: A's r-wide outputs, each distinct
    input once and, with dropout, each matrix's one-byte mask."""
    matrices = adapted_matrices(arch, framework.fused_projections, framework.lora_targets)
    narrow = sum(PRODUCT_BYTES * rank * m.per_token for m in matrices)
    distinct = {m.reads: m.fan_in * m.per_token for m in matrices}
    masks = sum(m.fan_in * m.per_token for m in matrices) if framework.adapter_dropout else 0.0
    return narrow + PRODUCT_BYTES * sum(distinct.values()) + masks


def _is_loss(op: OperatorRecord, logits: float) -> bool:
    if op.name in LOSS_OPERATORS:
        return True
    return (
        op.name == "aten._to_copy"
        and op.bytes_read + op.bytes_written >= 0.99 * UPCAST_BYTES_PER_LOGIT * logits
    )


def fused_loss(
    other_ops: tuple[OperatorRecord, ...], logits: float
) -> tuple[tuple[OperatorRecord, ...], tuple[OperatorRecord, ...]]:
    """(the other operators without the eager loss, the fused loss's kernels) over ``logits``
    logits (tokens × vocabulary)."""
    kept = tuple(op for op in other_ops if not _is_loss(op, logits))
    fused = tuple(
        replace(_chain("loss.compiled", phase, read * logits, written * logits), op_class="reduction",
                count=FUSED_LOSS_KERNELS[phase])
        for phase, (read, written) in FUSED_LOSS_BYTES.items()
    )  # fmt: skip
    return kept, fused
