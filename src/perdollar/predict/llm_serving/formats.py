"""Number formats an LLM is served in, and whether a chip can serve it.

A format fixes three things: the bytes a weight occupies (and so is read per decode step), the
bytes a KV-cache element occupies, and the tensor-core rate its matrix products run at.
Weight-only formats (int8, int4, GGUF Q4_K_M) store small weights but dequantise them and
multiply at the 16-bit rate; fp8 and fp4 multiply natively where the chip has the units.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError

_GPU_STACKS = frozenset({"cuda", "rocm"})
# Chips with fp4 tensor cores (the catalog's accelerator record carries no fp4 column yet): their
# dense fp4 rate is twice the fp8 rate (NVIDIA Blackwell datasheets).
_FP4_ARCHITECTURES = frozenset({"Blackwell", "Blackwell Ultra"})


@dataclass(frozen=True, slots=True)
class ServingFormat:
    name: str
    weight_bytes: float  # per parameter, group scales included
    kv_bytes: float  # per cached key or value element
    compute_dtype: str  # the catalog dtype whose peak the matrix products run at
    weight_only: bool  # weights dequantised to 16 bits before multiplying
    description: str
    quantised_embeddings: bool = False  # GGUF quantises the embedding and output matrices too
    # A MoE model's routed experts in their own format (gpt-oss ships MXFP4 experts, the rest bf16).
    experts_weight_bytes: float | None = None

    @property
    def expert_weight_bytes(self) -> float:
        """Bytes per parameter of the routed experts."""
        return self.weight_bytes if self.experts_weight_bytes is None else self.experts_weight_bytes


FORMATS: dict[str, ServingFormat] = {
    f.name: f
    for f in (
        ServingFormat("fp16", 2.0, 2.0, "fp16", False, "16-bit weights and KV cache"),
        ServingFormat("bf16", 2.0, 2.0, "bf16", False, "bfloat16 weights and KV cache"),
        ServingFormat("fp8", 1.0, 1.0, "fp8", False, "fp8 weights, activations and KV cache"),
        # W8A16 (per-channel scales): one byte a weight.
        ServingFormat("int8", 1.0, 2.0, "fp16", True, "int8 weight-only, 16-bit KV cache"),
        # GPTQ/AWQ with groups of 128: 4 bits plus a 16-bit scale and zero per group ≈ 4.25 bits.
        ServingFormat("int4", 4.25 / 8, 2.0, "fp16", True, "int4 weight-only (GPTQ/AWQ), 16-bit KV cache"),
        # llama.cpp's Q4_K_M averages about 4.85 bits a weight on Llama 3 8B (4.92 GB file / 8.03 B).
        ServingFormat(
            "q4_k_m", 4.85 / 8, 2.0, "fp16", True, "GGUF Q4_K_M weight-only, 16-bit KV cache", True
        ),
        ServingFormat("fp4", 4.5 / 8, 1.0, "fp4", False, "fp4 (block-scaled) weights, fp8 KV cache"),
        # gpt-oss's checkpoint: routed experts in MXFP4 (4-bit values, an 8-bit scale per 32 = 4.25
        # bits), everything else bf16; Hopper and older dequantise the experts to multiply
        # (OpenAI gpt-oss model card, 2025-08).
        ServingFormat(
            "mxfp4",
            2.0,
            2.0,
            "bf16",
            True,
            "MXFP4 routed experts, bf16 elsewhere and in the KV cache",
            experts_weight_bytes=4.25 / 8,
        ),
    )
}
ALIASES = {"f16": "fp16", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "gguf-q4": "q4_k_m"}
ALIASES |= {"awq": "int4", "gptq": "int4", "w4a16": "int4", "w8a16": "int8", "nvfp4": "fp4"}


def serving_format(name: str) -> ServingFormat:
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    if key not in FORMATS:
        raise PerdollarError(
            f"unknown serving precision {name!r}", f"use one of {', '.join(FORMATS)} (or awq, gptq, nvfp4)"
        )
    return FORMATS[key]


def peak_tflops(accelerator: Accelerator, fmt: ServingFormat) -> float | None:
    """Dense tensor rate the format's matrix products run at, or None when the chip lacks it."""
    if fmt.compute_dtype == "fp4":
        fp8 = accelerator.peak_tflops("fp8")
        return 2.0 * fp8 if fp8 and accelerator.architecture in _FP4_ARCHITECTURES else None
    rate = accelerator.peak_tflops(fmt.compute_dtype)
    if rate is None and fmt.compute_dtype == "fp16":
        rate = accelerator.peak_tflops("bf16")  # TPUs and some accelerators list bf16 only
    return rate


def unsupported_reason(accelerator: Accelerator, fmt: ServingFormat) -> str:
    """Why the chip cannot serve this format ('' when it can)."""
    if fmt.weight_only and accelerator.software_stack not in _GPU_STACKS:
        return f"{fmt.name} weight-only kernels exist for CUDA/ROCm GPUs, not {accelerator.software_stack}"
    if peak_tflops(accelerator, fmt) is None:
        return f"{accelerator.key} has no {fmt.compute_dtype} tensor units"
    return ""


# Bytes a cached key or value element takes in each KV-cache precision an engine offers
# (vLLM's --kv-cache-dtype, SGLang's --kv-cache-dtype, TensorRT-LLM's kv_cache_quant_algo).
KV_PRECISIONS = {"fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0}


def with_kv_precision(fmt: ServingFormat, kv_precision: str | None) -> ServingFormat:
    """``fmt`` with its KV cache held in ``kv_precision`` (None: as the format says)."""
    if kv_precision is None:
        return fmt
    key = kv_precision.strip().lower()
    if key not in KV_PRECISIONS:
        raise PerdollarError(
            f"unknown KV-cache precision {kv_precision!r}", f"use one of {', '.join(KV_PRECISIONS)}"
        )
    return replace(fmt, kv_bytes=KV_PRECISIONS[key])


def kv_precision_name(fmt: ServingFormat) -> str:
    """The KV-cache precision a format holds, by name (the 16-bit cache named after the format)."""
    if fmt.kv_bytes >= 2.0:
        return "bf16" if fmt.name == "bf16" else "fp16"
    return "fp8"
