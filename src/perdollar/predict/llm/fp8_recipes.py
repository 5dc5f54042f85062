"""FP8 training as each framework runs it: which products run in FP8, and what quantising costs.

Every recipe here runs the linear layers' three products (the forward's, the input gradient's and
the weight gradient's) in FP8: attention's query-key-value and output projections and the MLP's
up, gate and down projections. Attention itself, the embeddings, the LM head, the norms, softmax,
the loss and the optimizer stay in bf16 (Transformer Engine keeps FP8 attention off unless asked,
``NVTE_FP8_DPA``; torchao converts ``nn.Linear`` layers only, and torchtitan leaves the output
layer out).

Quantising a bf16 tensor reads it and writes it in FP8, once per layout a product needs
(Transformer Engine's developer guide, "Rowwise vs. Columnwise Usage" and "Scaling Modes"): on
Hopper and Ada an FP8 product takes only the TN layout, so an activation and an output gradient,
each feeding one product forward or input-gradient and the weight gradient's in the other
orientation, are written twice (the second copy transposed), and so is a weight (forward and
input gradient); Blackwell runs non-TN FP8 products, and per-tensor scaling there writes one
copy. Block scaling (MXFP8, a scale per 32 elements) quantises along the other axis for the
other product on every chip, so writes two copies, each with a one-byte scale per 32 elements.
A frozen base (LoRA) computes no weight gradient: one copy of each activation and gradient.

- ``te-delayed``: Transformer Engine's ``DelayedScaling`` (Megatron-Core, NeMo): one scale per
  tensor from an amax history that the kernels themselves record (no extra pass), reduced across
  ranks once per step (a few kilobytes, left out). A single kernel writes both layouts
  (``cast_transpose``). The norm before the query-key-value and MLP-up products and the MLP's
  activation quantise their output in the same kernel (``LayerNormLinear``, ``LayerNormMLP``),
  as the activation's backward does its gradient; those tensors cost only the FP8 copies
  written. Megatron-Core fuses q, k and v into one linear and the MLP's gate and up into another,
  each quantising its input once; Megatron-Core marks the first micro-batch of a step
  (``is_first_microbatch``) and Transformer Engine keeps each weight's FP8 copies for the rest.
- ``te-mxfp8``: Transformer Engine's ``MXFP8BlockScaling``, Megatron-Core's ``--fp8-recipe
  mxfp8`` on Blackwell: the same kernels and caching, with block scales.
- ``te-linear``: LLM Foundry's ``amp_fp8`` (Composer swaps each ``nn.Linear`` for Transformer
  Engine's ``te.Linear`` under ``DelayedScaling``): nothing fuses the cast into its producer, and
  Composer passes no ``is_first_microbatch``, so every micro-batch quantises the weights again;
  MPT's attention projects q, k and v with one linear (``Wqkv``).
- ``torchao-tensorwise``: torchao's ``Float8Linear`` with ``tensorwise`` dynamic scaling, as
  torchtitan converts its model (``--model.converters float8``). Each tensor's amax is a reduction
  over it before its cast (torchao's float8 roofline, ``torchao/testing/training/
  roofline_utils.py``): compiled, the amax fuses with the kernel before it, and one cast kernel
  writes both layouts of an activation or gradient; a weight's amax reads it separately and its
  two layouts are two kernels, each reading it, every micro-batch. Each ``nn.Linear`` casts its
  own input (torchtitan's q, k, v and gate, up are separate linears). Run eagerly (no compile),
  every amax reads its tensor once more.
- ``torchao-mxfp8``: torchao's MX recipe on Blackwell (torchtitan's ``mx`` converter): the two
  layouts are two kernels, each reading the bf16 tensor (torchao's roofline, as above).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.profile.model import OperatorRecord, Phase
from perdollar.workload.llm.architecture import DecoderArchitecture

if TYPE_CHECKING:
    from perdollar.predict.llm.plan import TrainingPlan

BF16_BYTES = 2.0
FP8_BYTES = 1.0
MX_BLOCK = 32  # elements sharing one E8M0 scale byte
# A linear layer's products, each in FP8 under every recipe here.
FP8_PRODUCTS = ("forward", "input gradient", "weight gradient")
FP8_LINEARS = ("attention query/key/value", "attention output", "MLP up and gate", "MLP down")
KEPT_IN_BF16 = ("attention (scores, softmax, values)", "embeddings", "LM head and loss", "norms",
                "rotary embedding and activations", "optimizer (fp32 master weights)")  # fmt: skip
ROLES = ("input", "grad_output", "weight")


@dataclass(frozen=True, slots=True)
class FP8Recipe:
    """How one framework quantises a linear layer's operands to FP8, each trait from its source."""

    name: str
    title: str
    scaling: str  # per-tensor | block (MXFP8)
    # Where the kernel making a tensor quantises it too: "linear.role" (linear: qkv, out, fc1, fc2).
    producer_fused: frozenset[str]
    amax_pass: str  # none (recorded by the kernels) | fused (with the kernel before) | separate
    kernel_per_layout: frozenset[str]  # roles whose second layout is a kernel of its own, reading again
    fused_projections: bool  # q, k, v one linear and gate, up one: each input quantised once
    weights_cached: bool  # weights quantised once an optimizer step, not every micro-batch
    needs_blackwell: bool  # block scaling: compute capability 10 or newer
    source: str

    @property
    def library(self) -> str:
        return "transformer-engine" if self.name.startswith("te-") else "torchao"

    @property
    def scale_bytes(self) -> float:
        return FP8_BYTES / MX_BLOCK if self.scaling == "block" else 0.0

    def layouts(self, accelerator: Accelerator, both_needed: bool) -> int:
        """FP8 copies written of a tensor that two products read in different orientations
        (``both_needed``): two for block scaling, and for per-tensor scaling where the products
        take only the TN layout (before Blackwell)."""
        if not both_needed:
            return 1
        return 2 if self.scaling == "block" or not is_blackwell(accelerator) else 1

    def bytes_per_element(self, linear: str, role: str, layouts: int) -> float:
        """Bytes moved quantising one element of ``role`` of ``linear`` into ``layouts`` copies."""
        fused = f"{linear}.{role}" in self.producer_fused
        reads = 0.0 if fused else BF16_BYTES
        if layouts == 2 and role in self.kernel_per_layout:
            reads += BF16_BYTES
        if self.amax_pass == "separate" or (self.amax_pass == "fused" and role == "weight"):
            reads += BF16_BYTES
        return reads + layouts * (FP8_BYTES + self.scale_bytes)


_TE_FUSED = frozenset({"qkv.input", "fc1.input", "fc2.input", "fc1.grad_output"})
_TE_SOURCE = (
    "Transformer Engine developer guide (Scaling Modes; Rowwise vs. Columnwise Usage; Scaling "
    "Recipes), LayerNormLinear/LayerNormMLP and Linear.forward(is_first_microbatch); Megatron-Core "
    "TransformerLayer (linear_qkv, linear_fc1) and --fp8-recipe"
)
# fmt: off
RECIPES: dict[str, FP8Recipe] = {
    recipe.name: recipe
    for recipe in (
        FP8Recipe("te-delayed", "Transformer Engine DelayedScaling (per-tensor, amax history)",
                  scaling="per-tensor", producer_fused=_TE_FUSED, amax_pass="none",
                  kernel_per_layout=frozenset(), fused_projections=True, weights_cached=True,
                  needs_blackwell=False, source=_TE_SOURCE),
        FP8Recipe("te-mxfp8", "Transformer Engine MXFP8BlockScaling (a scale per 32 elements)",
                  scaling="block", producer_fused=_TE_FUSED, amax_pass="none",
                  kernel_per_layout=frozenset(), fused_projections=True, weights_cached=True,
                  needs_blackwell=True, source=_TE_SOURCE),
        FP8Recipe("te-linear", "Transformer Engine te.Linear under DelayedScaling (Composer amp_fp8)",
                  scaling="per-tensor", producer_fused=frozenset(), amax_pass="none",
                  kernel_per_layout=frozenset(), fused_projections=True, weights_cached=False,
                  needs_blackwell=False,
                  source="mosaicml/composer utils/te_utils and precision amp_fp8 (te.Linear swap, "
                  "DelayedScaling, no is_first_microbatch); " + _TE_SOURCE),
        FP8Recipe("torchao-tensorwise", "torchao Float8Linear, tensorwise dynamic scaling (compiled)",
                  scaling="per-tensor", producer_fused=frozenset(), amax_pass="fused",
                  kernel_per_layout=frozenset({"weight"}), fused_projections=False,
                  weights_cached=False, needs_blackwell=False,
                  source="pytorch/ao torchao/float8 README (tensorwise recipe) and "
                  "torchao/testing/training/roofline_utils.py; torchtitan docs/float8.md"),
        FP8Recipe("torchao-tensorwise-eager", "torchao Float8Linear, tensorwise dynamic scaling (eager)",
                  scaling="per-tensor", producer_fused=frozenset(), amax_pass="separate",
                  kernel_per_layout=frozenset({"weight"}), fused_projections=False,
                  weights_cached=False, needs_blackwell=False,
                  source="pytorch/ao torchao/testing/training/roofline_utils.py (no fusion with the "
                  "previous kernel)"),
        FP8Recipe("torchao-mxfp8", "torchao MX training, MXFP8 (a scale per 32 elements)",
                  scaling="block", producer_fused=frozenset(), amax_pass="none",
                  kernel_per_layout=frozenset(ROLES), fused_projections=False, weights_cached=False,
                  needs_blackwell=True,
                  source="pytorch/ao torchao/prototype/mx_formats and roofline_utils.py (mxfp8: one "
                  "kernel per layout); torchtitan mx converter"),
    )
}
# fmt: on
# The recipe each framework runs for --precision fp8, on Hopper/Ada and on Blackwell.
FRAMEWORK_RECIPES = {
    "megatron": ("te-delayed", "te-mxfp8"),
    "nemo": ("te-delayed", "te-mxfp8"),
    "composer": ("te-linear", "te-linear"),
    "torchtitan": ("torchao-tensorwise", "torchao-mxfp8"),
}
EAGER_RECIPES = ("torchao-tensorwise-eager", "torchao-tensorwise-eager")
COMPILED_RECIPES = ("torchao-tensorwise", "torchao-mxfp8")


def library_of(precision: str, framework: str, accelerator: Accelerator, compiled: bool = False) -> str:
    """The FP8 library a run of ``precision`` uses: transformer-engine or torchao (the row-wise
    recipe is torchao's), whose products' rates are fitted apart."""
    if precision == "fp8-rowwise":
        return "torchao"
    return recipe_for(framework, accelerator, compiled).library


def is_blackwell(accelerator: Accelerator) -> bool:
    major = (accelerator.compute_capability or "0").split(".")[0]
    return major.isdigit() and int(major) >= 10


def recipe_for(framework: str, accelerator: Accelerator, compiled: bool = False) -> FP8Recipe:
    """The FP8 recipe ``framework`` runs on ``accelerator``: Transformer Engine's under Megatron-Core,
    NeMo and Composer, torchao's under torchtitan and (as Accelerate's torchao backend) the eager
    PyTorch trainers, compiled or not."""
    base = framework.split("+")[0]
    choices = FRAMEWORK_RECIPES.get(base) or (COMPILED_RECIPES if compiled else EAGER_RECIPES)
    return RECIPES[choices[1] if is_blackwell(accelerator) else choices[0]]


def recipe_problem(recipe: FP8Recipe, accelerator: Accelerator) -> str:
    """Why ``recipe`` cannot run on ``accelerator`` ('' when it can)."""
    if not accelerator.peak_fp8_tflops:
        return f"{accelerator.key} has no FP8 tensor cores"
    if recipe.needs_blackwell and not is_blackwell(accelerator):
        return f"{recipe.title} needs a Blackwell GPU (compute capability 10), not {accelerator.key}"
    return ""


def linears(arch: DecoderArchitecture) -> list[tuple[str, int, int, bool, float]]:
    """(linear, in features, out features, column-parallel, tokens' share) of each linear of a layer;
    linear is qkv, out, fc1 or fc2."""
    attention = [
        ("qkv", arch.hidden_size, arch.num_attention_heads * arch.head_dim, True, 1.0),
        ("qkv", arch.hidden_size, arch.kv_dim, True, 1.0),
        ("qkv", arch.hidden_size, arch.kv_dim, True, 1.0),
        ("out", arch.num_attention_heads * arch.head_dim, arch.hidden_size, False, 1.0),
    ]

    def mlp(width: int, share: float) -> list[tuple[str, int, int, bool, float]]:
        ups = [("fc1", arch.hidden_size, width, True, share)] * (2 if arch.gated_mlp else 1)
        return [*ups, ("fc2", width, arch.hidden_size, False, share)]

    experts = mlp(arch.intermediate_size, arch.experts_per_token / arch.num_experts) * arch.num_experts
    shared = mlp(arch.shared_intermediate_size, 1.0) if arch.shared_intermediate_size else []
    return attention + experts + shared


def cast_bytes(
    recipe: FP8Recipe,
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    tokens: int,
    tensor_parallel: int,
    *,
    train_base: bool = True,
    micro_batches: int = 1,
) -> dict[str, float]:
    """Bytes one layer's quantising moves on one tensor-parallel rank for one micro-batch of
    ``tokens``, by role (input, grad_output, weight): each rank quantises its share of each tensor
    (Megatron-Core and torchtitan cast before their FP8 all-gathers). Cached weights count 1/m of a
    step of ``micro_batches`` micro-batches."""
    totals = dict.fromkeys(ROLES, 0.0)
    previous_input: tuple[str, int, float] | None = None
    for linear, fan_in, fan_out, _column, share in linears(arch):
        rows = tokens * share
        this_input = (linear, fan_in, share)
        # A fused projection quantises its input once for all its parts.
        if not (recipe.fused_projections and this_input == previous_input):
            layouts = recipe.layouts(accelerator, train_base)
            totals["input"] += recipe.bytes_per_element(linear, "input", layouts) * rows * fan_in
        previous_input = this_input
        layouts = recipe.layouts(accelerator, train_base)
        totals["grad_output"] += recipe.bytes_per_element(linear, "grad_output", layouts) * rows * fan_out
        weight_share = 1.0 / max(micro_batches, 1) if recipe.weights_cached else 1.0
        layouts = recipe.layouts(accelerator, True)
        per_element = recipe.bytes_per_element(linear, "weight", layouts)
        totals["weight"] += per_element * fan_in * fan_out * weight_share
    return {role: value / tensor_parallel for role, value in totals.items()}


CAST_PHASES: dict[str, Phase] = {"input": "forward", "weight": "forward", "grad_output": "backward"}


def cast_ops(
    recipe: FP8Recipe,
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    tokens: int,
    tensor_parallel: int,
    *,
    train_base: bool = True,
    micro_batches: int = 1,
) -> tuple[OperatorRecord, ...]:
    """One layer's quantising kernels, memory-bound and fused with nothing beyond what
    :func:`cast_bytes` counts (their names start ``fp8.quantise``)."""
    traffic = cast_bytes(recipe, arch, accelerator, tokens, tensor_parallel, train_base=train_base,
                         micro_batches=micro_batches)  # fmt: skip
    kernels = len(linears(arch))
    ops = (
        OperatorRecord(name=f"fp8.quantise_{role}", op_class="unclassified", phase=CAST_PHASES[role],
                       flops=0.0, bytes_read=moved / 2, bytes_written=moved / 2, dtype="bf16",
                       count=kernels)
        for role, moved in traffic.items()
        if moved > 0
    )  # fmt: skip
    return tuple(ops)


def recipe_summary(recipe: FP8Recipe) -> dict[str, object]:
    """What a prediction says of its FP8 recipe: the products in FP8 and what stays in bf16."""
    return {
        "recipe": recipe.name,
        "title": recipe.title,
        "library": recipe.library,
        "scaling": recipe.scaling,
        "fp8_gemms": [f"{linear}: {', '.join(FP8_PRODUCTS)}" for linear in FP8_LINEARS],
        "bf16": list(KEPT_IN_BF16),
        "weights_quantised": "once a step" if recipe.weights_cached else "every micro-batch",
        "source": recipe.source,
    }


def checked_recipe(framework: str, accelerator: Accelerator, compiled: bool = False) -> FP8Recipe:
    """:func:`recipe_for`, refused in one line where the chip cannot run it."""
    recipe = recipe_for(framework, accelerator, compiled)
    problem = recipe_problem(recipe, accelerator)
    if problem:
        raise PerdollarError(f"fp8 training cannot run here: {problem}", "use --precision amp-bf16")
    return recipe


def fp8_summary(
    plan: TrainingPlan, accelerator: Accelerator, precision: str, cast_s: float
) -> dict[str, object]:
    """The per-tensor FP8 recipe the plan's framework runs here and what its quantising costs a step."""
    if precision != "fp8":
        return {}
    framework = plan.resolved_framework
    return {**recipe_summary(recipe_for(framework.name, accelerator, framework.compiled)),
            "quantise_s_per_step": cast_s}  # fmt: skip
