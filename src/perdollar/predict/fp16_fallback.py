"""Mixed-precision bf16 training on a chip without bf16: it runs in fp16 with loss scaling instead.

Autocast to bf16 needs bf16 arithmetic (NVIDIA Ampere and newer, CDNA 2 and newer); on a T4, V100
or K80 the same recipe runs in fp16 with a dynamic loss scale (PyTorch's ``torch.amp.GradScaler``;
Hugging Face's ``fp16=True``; Unsloth's notebooks pick ``fp16 = not is_bfloat16_supported()``).
fp32 master weights and optimizer states are what make that swap safe: the scaled fp16 gradients
are unscaled into them. So ``amp-bf16`` (the default) falls back, predicted at the chip's fp16
rate, and says so; pure ``bf16`` training (bf16 weights and states, no fp32 master) has no fp16
equivalent, since fp16's 5-bit exponent under- and overflows without one, and stays refused.
The scaler's own work (an unscale and an inf/NaN check over the gradients once a step) streams
the gradients once and is left out.
"""

from __future__ import annotations

from dataclasses import replace

from perdollar.catalog.model import Accelerator

FALLS_BACK = frozenset({"amp-bf16"})
REFUSED_WITHOUT_BF16 = frozenset({"bf16"})


def falls_back_to_fp16(accelerator: Accelerator | None, precision: str) -> bool:
    """Whether ``precision`` on ``accelerator`` runs as fp16 with loss scaling."""
    return accelerator is not None and precision in FALLS_BACK and not accelerator.supports_bf16


def fp16_fallback_remark(accelerator: Accelerator | None, precision: str) -> str:
    """``fp16 with loss scaling: no bf16 on T4`` where the chip falls back ('' where it does not)."""
    if accelerator is None or not falls_back_to_fp16(accelerator, precision):
        return ""
    return f"fp16 with loss scaling: no bf16 on {accelerator.family}"


def as_run(accelerator: Accelerator, precision: str) -> Accelerator:
    """The chip as ``precision`` runs on it: where it falls back, its bf16 work at its fp16 rate."""
    if not falls_back_to_fp16(accelerator, precision):
        return accelerator
    return replace(accelerator, peak_bf16_tflops=accelerator.peak_fp16_tflops or accelerator.peak_fp32_tflops)


def bf16_refusal(accelerator: Accelerator | None, precision: str) -> str:
    """Why ``precision`` cannot run on ``accelerator`` for want of bf16 ('' when it can)."""
    if accelerator is None or accelerator.supports_bf16 or precision not in REFUSED_WITHOUT_BF16:
        return ""
    return bf16_refusal_text()


def bf16_refusal_text() -> str:
    return (
        "bf16 not supported by this accelerator, and pure bf16 training (no fp32 master weights) has "
        "no fp16 stand-in: use --precision amp-bf16 (runs as fp16 with loss scaling here) or amp-fp16"
    )
