"""Optimizers as the memory and step models see them: the bytes of state each trained parameter
keeps on the GPU and the bytes one optimizer step moves.

Every optimizer here keeps, under mixed precision, a float32 master copy of each trained weight
beside its states (4 bytes; pure bf16/fp16 and fp32 training keep none: the weight is the master).
Its states are elements of the training precision (float32 under mixed precision, half precision
under pure bf16/fp16) unless they are quantised:

- ``adamw``: PyTorch's AdamW, two moments;
- ``adamw-8bit``: bitsandbytes' ``AdamW8bit``: each moment one unsigned byte per element with a
  float32 absolute maximum per block of 256 elements (block-wise dynamic quantisation: the
  ``Optimizer2State`` of ``bitsandbytes/optim/optimizer.py`` sizes ``absmax1``/``absmax2`` as
  ceil(n / 256) floats; bitsandbytes' "Overview" of its optimizers, documentation v0.45–0.50), so
  2 × (1 + 4/256) bytes instead of 2 × 4;
- ``paged-adamw-8bit`` and ``paged-adamw``: bitsandbytes' ``PagedAdamW8bit``/``PagedAdamW``, the
  same bytes, held in CUDA unified memory (bitsandbytes' "Paged optimizers" page): when the GPU
  runs short, the driver evicts state pages to host memory instead of failing, and migrates them
  back when the step touches them;
- ``sgd``: SGD with momentum, one state (without momentum it keeps none; momentum is how it is run).

Paging, as modelled: a paged optimizer's states are the one part of a step's memory that may
overflow to the host without an out-of-memory error. What overflows crosses PCIe twice a step
(migrated in for the optimizer step, evicted again when the next forward needs the room), at the
same achievable PCIe rate as the CPU-offload model; what fits stays resident and costs nothing.
Only the moments page: the float32 master weights (the parameters the optimizer updates),
gradients and activations are ordinary allocations.

AdamW stays the default in every mode, QLoRA included. QLoRA trains only the adapters (Llama-3.1-8B
at rank 16: 42 M parameters), so 8-bit moments would save about 0.25 GB of 0.5 GB: nothing that
changes a fit. The recipes also differ: the QLoRA paper's ``qlora.py`` (artidoro/qlora) defaults
to paged 32-bit AdamW, many Hugging Face examples to paged 8-bit AdamW, torchtune's QLoRA configs
(``llama3_1/8B_qlora_single_device``) to PyTorch's fused AdamW. Keeping AdamW leaves every
answer given before as it was; ``--optimizer paged-adamw-8bit`` asks for the other recipe.

Speed: PyTorch's fused AdamW (and Apex/Transformer Engine's multi-tensor Adam) streams its bytes.
On one H200 (``benchmarks/gpu_full_finetune_steps_h200.csv``: Llama-3.2-1B, 3.2-3B and 3.1-8B)
the fused step moved them at 67–69% of the memory bandwidth with float32 states and master
weights, and at 48–52% with bf16 states (it computes in float32, converting each element twice);
``STREAMING_BANDWIDTH_SHARE`` is 0.6, between the two. (Before it was measured, the roofline's
generic elementwise rate made the step 1.5–2.2 times slower than this; the pre-training fit does
not move: its step is dominated by the layers.)
bitsandbytes' block-wise 8-bit update does not stream.
It quantises each moment again on every step (a search of its 256-value code per element, in
CUDA cores), and launches one kernel per tensor. On one H200 (bitsandbytes 0.50.2,
``benchmarks/gpu_full_finetune_steps_h200.csv``) it stepped Llama-3.1-8B in 232 ms and
Llama-3.2-1B in 42–43 ms, against 45 and 7.5 ms for fused AdamW on the same bf16 weights: about
35 G elements a second, an eighth of what its bytes would allow. ``EIGHT_BIT_WORK_PER_ELEMENT``
expresses that as float32 operations per element at the roofline's optimizer rate, fitted to the
8B step (the 1B steps are then 13–15% under, their per-tensor launches being a larger share).

8-bit optimizers keep float32 states for tensors under 4,096 elements (``min_8bit_size``); every
trained matrix of a language model (LoRA's adapters included, r × d ≥ 8 × 2,048) is larger, and
the norms' vectors are too few to count.
"""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.errors import PerdollarError
from perdollar.workload.llm.workload import TRAINING_OPTIMIZERS

DEFAULT_OPTIMIZER = "adamw"
BLOCKWISE_BLOCK_ELEMENTS = 256  # bitsandbytes' block of the 8-bit optimizers' states
BLOCKWISE_SCALE_BYTES = 4.0  # its float32 absolute maximum per block
EIGHT_BIT_STATE_BYTES = 1.0 + BLOCKWISE_SCALE_BYTES / BLOCKWISE_BLOCK_ELEMENTS
# Host memory's side of paging: PCIe at an achievable 20 GB/s per GPU (as the CPU-offload model).
PAGING_BYTES_PER_S = 20e9
EIGHT_BIT_WORK_PER_ELEMENT = 600.0  # fitted: see the module's docstring ("Speed")
STREAMING_BANDWIDTH_SHARE = 0.6  # measured: see the module's docstring ("Speed")

# Per trained parameter, by training precision: (master weight bytes, bytes of a state element,
# bytes of the weight the model computes with, of its gradient). Precisions without a record
# (fp8, fp8-rowwise) train with bf16 mixed precision's master weights and states.
_PRECISION_BYTES = {
    "amp-bf16": (4.0, 4.0, 2.0, 2.0),
    "amp-fp16": (4.0, 4.0, 2.0, 2.0),
    "bf16": (0.0, 2.0, 2.0, 2.0),
    "fp16": (0.0, 2.0, 2.0, 2.0),
    "fp32": (0.0, 4.0, 4.0, 4.0),
    "tf32": (0.0, 4.0, 4.0, 4.0),
}


@dataclass(frozen=True, slots=True)
class Optimizer:
    """What an optimizer keeps and moves per trained parameter, each trait as its source states it."""

    name: str
    title: str
    states: int  # AdamW's two moments, SGD's momentum
    eight_bit: bool  # block-wise 8-bit states, whatever the training precision
    paged: bool  # states in unified memory: may page to the host instead of running out
    source: str

    def _state_element_bytes(self, precision: str) -> float:
        return EIGHT_BIT_STATE_BYTES if self.eight_bit else _bytes(precision)[1]

    def state_bytes(self, precision: str) -> float:
        """Bytes of optimizer state per trained parameter: the master weight and the states."""
        master = _bytes(precision)[0]
        return master + self.states * self._state_element_bytes(precision)

    def moment_share(self, precision: str) -> float:
        """The states' share of :meth:`state_bytes` (the rest is the master weight)."""
        total = self.state_bytes(precision)
        return self.states * self._state_element_bytes(precision) / total if total else 0.0

    def step_bytes(self, precision: str) -> float:
        """Bytes one step moves per trained parameter: it reads the gradient, the master weight (or
        the weight itself) and the states, and writes the master, the states and the weight the
        model computes with (quantised states are dequantised and quantised again in registers)."""
        master, _, weight, gradient = _bytes(precision)
        states = self.states * self._state_element_bytes(precision)
        read = gradient + states + (master or weight)
        written = states + master + weight
        return read + written


def _bytes(precision: str) -> tuple[float, float, float, float]:
    return _PRECISION_BYTES.get(precision, _PRECISION_BYTES["amp-bf16"])


BNB_SOURCE = (
    "bitsandbytes optim/optimizer.py (Optimizer2State: uint8 state1/state2, float32 absmax per 256 "
    "elements) and its documentation's 'Overview' and 'Paged optimizers' pages (v0.45–0.50)"
)
OPTIMIZERS: dict[str, Optimizer] = {
    optimizer.name: optimizer
    for optimizer in (
        Optimizer("adamw", "AdamW", states=2, eight_bit=False, paged=False,
                  source="torch.optim.AdamW: exp_avg and exp_avg_sq in the parameter's dtype"),
        Optimizer("adamw-8bit", "AdamW 8-bit (bitsandbytes)", states=2, eight_bit=True, paged=False,
                  source=BNB_SOURCE),
        Optimizer("paged-adamw-8bit", "paged AdamW 8-bit (bitsandbytes)", states=2, eight_bit=True,
                  paged=True, source=BNB_SOURCE),
        Optimizer("paged-adamw", "paged AdamW (bitsandbytes, 32-bit states)", states=2, eight_bit=False,
                  paged=True, source=BNB_SOURCE),
        Optimizer("sgd", "SGD with momentum", states=1, eight_bit=False, paged=False,
                  source="torch.optim.SGD: one momentum_buffer in the parameter's dtype"),
    )
}  # fmt: skip
assert tuple(OPTIMIZERS) == TRAINING_OPTIMIZERS, "the workload's optimizer names and this table differ"


def optimizer_for(name: str | None) -> Optimizer:
    """The named optimizer (None: AdamW); one-line error for an unknown name."""
    chosen = (name or DEFAULT_OPTIMIZER).lower()
    if chosen not in OPTIMIZERS:
        raise PerdollarError(f"unknown optimizer {name!r}", f"use --optimizer {', '.join(OPTIMIZERS)}")
    return OPTIMIZERS[chosen]


def paging_seconds(paged_out_bytes: float) -> float:
    """Seconds a step spends moving a paged optimizer's overflowed states in and out again."""
    return 2.0 * paged_out_bytes / PAGING_BYTES_PER_S
