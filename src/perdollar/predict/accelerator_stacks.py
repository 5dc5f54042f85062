"""The software stacks of non-GPU accelerators, declared once: what each runs, in which number
formats, over which parallel shapes, and the few fractions fitted on its vendor's published tables.

Trainium and Inferentia run language models through AWS Neuron (NxD Training, NxD Inference and
vLLM on Neuron), TPUs through JAX/XLA (MaxText for training, JetStream or vLLM-TPU for serving),
Gaudi through Intel's stack (Optimum-Habana, vLLM-Gaudi). None runs PyTorch eager code, so their
predictions are not the GPU roofline: training is the stack's achieved share of the chip's bf16
peak (model FLOPs, MaxText's and Neuron's own definition), serving is the GPU serving model with
the stack's fitted bandwidth fraction and per-step time. The fractions come from
benchmarks/published_nongpu_llm.csv (``benchmarks/nongpu_llm_accuracy.py`` prints the fit and
each source held out of it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from perdollar.catalog.model import Accelerator, SoftwareStack

# Memory a stack leaves for the model: runtime, collectives' buffers and compiled graphs.
USABLE_MEMORY_SHARE = 0.90


@dataclass(frozen=True, slots=True)
class TrainingStack:
    """A training framework of a non-GPU stack.

    model_flops_fraction: achieved model FLOPs over the chip's dense bf16 peak, fitted;
    tensor_parallel: the degrees (in chips) its tensor parallelism takes inside one instance;
    strategy: how it shards the rest (``fsdp``: weights, gradients and optimizer state over every
    chip, as MaxText does; ``zero1``: optimizer state over the data-parallel ranks, as NxD does).
    """

    name: str
    label: str
    software_stack: SoftwareStack
    chips: frozenset[str]  # the chips of the stack it trains on
    model_types: frozenset[str]
    precisions: frozenset[str]
    tensor_parallel: tuple[int, ...]
    strategy: str
    model_flops_fraction: float | None  # None: no published table was fitted; the stack is not ranked
    version: str
    sources: Mapping[str, str] = field(default_factory=dict)
    fitted_on: frozenset[str] = frozenset()  # the chips whose published rows set the fraction


@dataclass(frozen=True, slots=True)
class ServingStack:
    """A serving engine of a non-GPU stack; its fitted terms feed the serving model.

    bandwidth: achieved fraction of the memory bandwidth streaming weights in decode; step_s: time
    each decode step spends beside the streaming (graph launch, collectives' latency, sampling);
    compute: achieved fraction of the dense peak in prefill (the stack's training fraction where no
    serving table measures prefill); tensor_parallel: degrees in chips per chip family.
    """

    name: str
    label: str
    software_stack: SoftwareStack
    chips: frozenset[str]  # the chips of the stack it serves on
    model_types: frozenset[str]
    formats: frozenset[str]
    fp8_chips: frozenset[str]  # chips on which the stack serves fp8 weights
    bandwidth: float
    step_s: float
    compute: float
    fitted: bool  # False: round starting fractions, no published table of this stack was found
    version: str
    sources: Mapping[str, str] = field(default_factory=dict)
    fitted_on: frozenset[str] = frozenset()  # the chips whose published rows set the fractions


# MaxText and JetStream support TPU v4 and newer; the v2 and v3 generations are out of their support.
_MAXTEXT_TPUS = frozenset({"TPU-v4", "TPU-v5e", "TPU-v5p", "TPU-v6e"})
_GAUDIS = frozenset({"Gaudi", "Gaudi2", "Gaudi3"})
_LLAMA_LIKE = frozenset({"llama", "mistral", "mixtral", "qwen2", "qwen3"})

# Fitted on every row of each stack (benchmarks/nongpu_llm_accuracy.py prints the same numbers).
TRAINING_STACKS: dict[SoftwareStack, TrainingStack] = {
    "neuron": TrainingStack(
        name="nxd-training",
        label="NxD Training (Neuron)",
        software_stack="neuron",
        chips=frozenset({"Trainium", "Trainium2"}),  # Inferentia is for inference only
        model_types=frozenset({"llama", "mistral", "mixtral", "gpt_neox"}),
        precisions=frozenset({"amp-bf16", "bf16"}),
        tensor_parallel=(1, 2, 4, 8, 16),  # 2 to 32 NeuronCores of one instance's NeuronLink ring
        strategy="zero1",
        # One share for every plan (benchmarks/nongpu_llm_accuracy.py); training takes a compute and a
        # NeuronLink share with each plan's terms from perdollar.predict.nxd_trainium.
        model_flops_fraction=0.264,
        version="Neuron 2.15-2.24",
        sources={"trn1": "aws-neuron-sdk general/benchmarks/trn1/training_data_decoder.csv"},
        fitted_on=frozenset({"Trainium"}),
    ),
    "xla": TrainingStack(
        name="maxtext",
        label="MaxText/JAX",
        software_stack="xla",
        chips=_MAXTEXT_TPUS,
        # gpt2: the GPT-3 family's decoder (learned positions, GELU MLP), MaxText's gpt3 decoder block.
        model_types=_LLAMA_LIKE | frozenset({"gemma", "gemma2", "gemma3", "deepseek_v3", "gpt2"}),
        precisions=frozenset({"amp-bf16", "bf16"}),
        tensor_parallel=(1, 2, 4, 8),  # a mesh axis of the slice's ICI torus
        strategy="fsdp",
        # One share for every TPU (benchmarks/nongpu_llm_accuracy.py); training takes each
        # generation's own share, slice loss and DCN time from perdollar.predict.maxtext_tpu.
        model_flops_fraction=0.611,
        version="MaxText 2025",
        sources={
            "v4/v5e/v5p": "AI-Hypercomputer/maxtext src/maxtext/configs/tpu/v4|v5e|v5p/README.md",
        },
        fitted_on=frozenset({"TPU-v4", "TPU-v5e", "TPU-v5p"}),
    ),
    "habana": TrainingStack(
        name="optimum-habana",
        label="Optimum-Habana (Gaudi)",
        software_stack="habana",
        chips=_GAUDIS,
        model_types=_LLAMA_LIKE | frozenset({"falcon", "gpt_neox", "gemma"}),
        precisions=frozenset({"amp-bf16", "bf16", "fp8"}),
        tensor_parallel=(1, 2, 4, 8),
        strategy="zero1",
        model_flops_fraction=None,
        version="Optimum-Habana 1.x",
    ),
}

SERVING_STACKS: dict[SoftwareStack, ServingStack] = {
    "neuron": ServingStack(
        name="nxd-inference",
        label="NxD Inference / vLLM on Neuron",
        software_stack="neuron",
        chips=frozenset({"Inferentia2", "Trainium", "Trainium2"}),  # not the first Inferentia
        model_types=_LLAMA_LIKE | frozenset({"opt", "dbrx"}),
        formats=frozenset({"fp16", "bf16", "fp8"}),
        fp8_chips=frozenset({"Trainium2"}),
        bandwidth=0.482,
        step_s=3.17e-3,
        compute=0.264,
        fitted=True,
        version="Neuron 2.14",
        sources={
            "inf2/trn1": "aws-neuron-sdk general/benchmarks/inf2/latency_data_LLM.csv, "
            "trn1/trn1_latency_data_LLM.csv"
        },
        fitted_on=frozenset({"Inferentia2", "Trainium"}),
    ),
    "xla": ServingStack(
        name="jetstream",
        label="JetStream / vLLM-TPU",
        software_stack="xla",
        chips=_MAXTEXT_TPUS,
        model_types=_LLAMA_LIKE | frozenset({"gemma", "gemma2", "gemma3"}),
        formats=frozenset({"fp16", "bf16"}),
        fp8_chips=frozenset(),
        # Fitted on TPU v5e-8 at full batch (Llama 2 7B/13B, Llama 3 8B, Gemma 7B); the step time is
        # the 2024 engines' per-step host work. Other TPU generations take the v5e fractions.
        bandwidth=0.671,
        step_s=12.28e-3,
        compute=0.611,  # MaxText's training fraction: no published table measures TPU prefill alone
        fitted=True,
        version="JetStream 2024 (jetstream-pytorch, MaxText engine)",
        sources={
            "v5e": "AI-Hypercomputer/jetstream-pytorch benchmarks/summary.md; AI-Hypercomputer/tpu-recipes "
            "inference/v5e/JetStream-Maxtext/Llama2-7B/README.md",
        },
        fitted_on=frozenset({"TPU-v5e"}),
    ),
    "habana": ServingStack(
        name="vllm-gaudi",
        label="vLLM-Gaudi",
        software_stack="habana",
        chips=_GAUDIS,
        model_types=_LLAMA_LIKE | frozenset({"falcon", "gemma"}),
        formats=frozenset({"fp16", "bf16", "fp8"}),
        fp8_chips=frozenset({"Gaudi2", "Gaudi3"}),
        bandwidth=0.70,
        step_s=2e-3,
        compute=0.50,
        fitted=False,
        version="vLLM-Gaudi 2025",
    ),
}

# Chips per replica a stack's serving can take, by chip: NxD Inference counts NeuronCores (two a
# chip on Inferentia2 and Trainium; tensor-parallel degrees 2 to 32, and 24 on inf2.48xlarge);
# a TPU replica is a sub-slice (v5e and v6e: 1, 2x2, 2x4 chips; v5p: one 2x2x1 host and up).
SERVING_DEGREES: dict[str, tuple[int, ...]] = {
    "Inferentia2": (1, 2, 4, 6, 12),
    "Trainium": (1, 2, 4, 8, 16),
    "Trainium2": (1, 2, 4, 8, 16),
    "TPU-v5e": (1, 4, 8),
    "TPU-v6e": (1, 4, 8),
    "TPU-v5p": (4, 8, 16),
    "TPU-v4": (4, 8, 16),
}
DEFAULT_SERVING_DEGREES = (1, 2, 4, 8)

# TPU slices come in fixed shapes: v5e and v6e 2D tori (1x1, 2x2, 2x4, 4x4 … 16x16 chips), v4 and
# v5p 3D tori built of 2x2x1 hosts (multiples of four chips) — Cloud TPU's system-architecture pages.
_TWO_D_SLICES = frozenset({1, 4, 8, 16, 32, 64, 128, 256})


def slice_problem(accelerator: Accelerator, chips: int) -> str:
    """Why ``chips`` chips of a TPU are not one slice ('' when they are, or when not a TPU)."""
    if accelerator.software_stack != "xla":
        return ""
    if accelerator.key in ("TPU-v5e", "TPU-v6e"):
        if chips not in _TWO_D_SLICES:
            return f"{chips} chips is not a {accelerator.key} slice shape (1, 4, 8, 16 … 256 chips)"
        return ""
    if chips % 4:
        return f"{chips} chips is not a {accelerator.key} slice shape (multiples of a 2x2x1 host)"
    return ""


def fit_note(accelerator: Accelerator, stack: TrainingStack | ServingStack) -> str:
    """How far the chip's figures rest on published rows ('' when its own rows set the fit)."""
    if isinstance(stack, TrainingStack) and stack.model_flops_fraction is None:
        return f"{stack.label}: no published table fitted; spec-only"
    if isinstance(stack, ServingStack) and not stack.fitted:
        return f"{stack.label}: no published table fitted; round starting fractions"
    if not stack.fitted_on or accelerator.key in stack.fitted_on:
        return ""
    return (
        f"{accelerator.key} figures rest on {stack.label}'s {'/'.join(sorted(stack.fitted_on))} fit "
        f"scaled by the chip's specs"
    )


def chip_problem(accelerator: Accelerator, stack_label: str, chips: frozenset[str]) -> str:
    if accelerator.key in chips:
        return ""
    return f"{stack_label} does not run on {accelerator.key} (it runs on {', '.join(sorted(chips))})"


def model_problem(model_type: str, stack_label: str, model_types: Iterable[str]) -> str:
    if model_type in model_types:
        return ""
    return f"{stack_label} has no {model_type} model (it runs {', '.join(sorted(model_types))})"


def serving_degrees(accelerator: Accelerator, chips_per_instance: int) -> tuple[int, ...]:
    """The tensor-parallel degrees (in chips) a replica of this chip's stack can take here."""
    degrees = SERVING_DEGREES.get(accelerator.key, DEFAULT_SERVING_DEGREES)
    return tuple(d for d in degrees if d <= chips_per_instance)


def serving_kv_problem(stack: ServingStack, kv_precision: str | None) -> str:
    """Why the stack's record cannot hold the KV cache in ``kv_precision`` ('' when it can): its
    fitted rows hold a 16-bit cache, and an 8-bit one is not modelled on it."""
    if kv_precision is None or kv_precision.strip().lower() in ("fp16", "bf16"):
        return ""
    return f"{stack.label}: a KV cache in {kv_precision} is not modelled (its record holds a 16-bit cache)"


def serving_format_problem(stack: ServingStack, accelerator: Accelerator, fmt: str) -> str:
    if fmt not in stack.formats:
        return f"{stack.label} serves no {fmt} weights (it serves {', '.join(sorted(stack.formats))})"
    if fmt == "fp8" and accelerator.key not in stack.fp8_chips:
        return f"{stack.label} serves fp8 weights only on {', '.join(sorted(stack.fp8_chips)) or 'no chip'}"
    return ""


# ---- the fitted quantities, shared with the benchmark that fits them ----


def model_flops_per_token(params: float, layers: float, hidden: float, seq_len: float) -> float:
    """Training FLOPs per token: 6 per parameter, plus causal attention's score products
    (6·layers·hidden·seq: half of the full 12, as MaxText and Megatron count it)."""
    attention = 6.0 * layers * hidden * seq_len if layers and hidden else 0.0
    return 6.0 * params + attention


def fit_fraction(achieved: Iterable[float]) -> float:
    """One fraction for a stack: the geometric mean of the rows' achieved fractions."""
    values = [v for v in achieved if v > 0]
    if not values:
        raise ValueError("no row to fit")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def ideal_decode_step_s(
    params: float,
    chips: int,
    bandwidth_gbps: float,
    *,
    batch: int = 1,
    context: float = 0.0,
    kv_bytes_per_token: float = 0.0,
) -> float:
    """Seconds one decode step takes to stream the 16-bit weights and the batch's KV cache once over
    the replica's chips at the datasheet rate: the quantity the decode fit scales."""
    streamed = params * 2.0 + batch * context * kv_bytes_per_token
    return streamed / (chips * bandwidth_gbps * 1e9)


def decode_step_s(stack: ServingStack, ideal_s: float) -> float:
    """The stack's decode step: the ideal streaming time at its fitted bandwidth share, plus its step time."""
    return ideal_s / stack.bandwidth + stack.step_s


def fit_decode(rows: Iterable[tuple[float, float]]) -> tuple[float, float]:
    """(bandwidth fraction, seconds per step) from (ideal streaming seconds, measured seconds)
    pairs: the least-squares line measured = ideal / fraction + step (one pair: no step)."""
    pairs = list(rows)
    n = len(pairs)
    if n == 0:
        raise ValueError("a decode fit needs a row")
    if n == 1:  # one row cannot separate the two terms: all of its time goes to streaming
        ideal, measured = pairs[0]
        return ideal / measured, 0.0
    mean_x = sum(x for x, _ in pairs) / n
    mean_y = sum(y for _, y in pairs) / n
    var = sum((x - mean_x) ** 2 for x, _ in pairs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in pairs) / var if var else mean_y / mean_x
    step = max(mean_y - slope * mean_x, 0.0)
    if step == 0.0:
        slope = sum(y for _, y in pairs) / sum(x for x, _ in pairs)
    return 1.0 / slope, step
