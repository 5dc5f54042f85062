"""The best model FLOPs utilisation published for a chip generation at a scale: a prediction above
it is held to it, and says so.

Each limit is the highest MFU (6·N + attention FLOPs per token over the dense bf16 peak, the
convention of :data:`perdollar.predict.llm.step.MFU_CONVENTION`) that a named public source
reports for that generation, on at most ``max_gpus`` GPUs (None: any number). A roofline that
predicts more has found an efficiency nobody has shown; until someone does, the answer is held to
what has been shown. The user's own runs calibrate the held figure, so a run measured faster is
reproduced as measured. FP8 runs are left alone (their MFU is reported against the bf16 peak, and
their best published figures are not bf16's).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MfuLimit:
    generation: str  # the accelerator's architecture, as the catalog names it (a prefix)
    max_gpus: int | None  # the largest run the limit is for (None: any)
    limit: float
    source: str


# fmt: off
MFU_LIMITS: tuple[MfuLimit, ...] = (
    MfuLimit("Ampere", 8, 0.596,
             "LLM Foundry's benchmark tables (mosaicml/llm-foundry, scripts/train/benchmarking): "
             "MPT-13B at 2,048 tokens on 8 A100-80GB, 59.6%"),
    MfuLimit("Ampere", None, 0.563,
             "Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer "
             "Models' (Megatron-LM, selective recomputation, thousands of A100s), 56.3%"),
    MfuLimit("Hopper", None, 0.47,
             "the Megatron-LM README (NVIDIA/Megatron-LM): up to 47% on H100 clusters; LLM Foundry's "
             "best on 8 H100s is 46.4%"),
    # No bf16 training MFU above Hopper's is published for Blackwell; until one is, Hopper's holds.
    MfuLimit("Blackwell", None, 0.47,
             "none published above Hopper's 47% (Megatron-LM README) for Blackwell in bf16"),
)
# fmt: on
ANY_CHIP = MfuLimit(
    "", None, 0.60, "no bf16 training MFU above LLM Foundry's 59.6% on A100s is published for any GPU"
)


def mfu_limit(architecture: str, gpus: int) -> MfuLimit:
    """The limit for ``gpus`` GPUs of ``architecture``: its generation's for that scale, else any chip's."""
    for entry in MFU_LIMITS:
        fits_scale = entry.max_gpus is None or gpus <= entry.max_gpus
        if architecture.startswith(entry.generation) and fits_scale:
            return entry
    return ANY_CHIP


def held_remark(predicted: float, limit: MfuLimit) -> str:
    """The sentence a held prediction carries."""
    where = f"on {limit.generation}" if limit.generation else "on any GPU"
    return (
        f"MFU held to {limit.limit:.0%} (predicted {predicted:.0%}): the best published {where} "
        f"at this scale ({limit.source})"
    )
