"""Serving-engine features that change what a replica serves: prefix caching and speculative decoding.

Prefix caching: a share F of every prompt is already in the cache (a system prompt, a shared
document, an earlier turn). Prefill computes only the uncached (1−F)·I tokens, though each of
them still attends to the whole prompt before it; the cached prefix's KV blocks are held once
and shared by every sequence that starts with it.

Speculative decoding (Leviathan, Kalman and Matias, "Fast Inference from Transformers via
Speculative Decoding", ICML 2023): a cheap proposer guesses k tokens, the model checks all of them
in one step over k+1 positions, and keeps the guesses up to the first rejected one plus one token
of its own. With each guess accepted with probability a, independently, a verify step yields
(1 − a^(k+1)) / (1 − a) tokens on average. A verify step reads the weights and the cache once,
as a decode step does, but multiplies k+1 tokens per sequence: at small batch it costs little
more than one step, at large batch, where decode is already compute-bound, it costs about k+1
steps and the gain is gone. The proposer is a small draft model run k times, or the model's own
multi-token-prediction (MTP) head, one extra layer (DeepSeek-V3).
"""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.errors import PerdollarError
from perdollar.workload.llm.architecture import DecoderArchitecture

SPECULATIVE_METHODS = ("draft-model", "mtp")
DEFAULT_ACCEPTANCE = 0.7
DEFAULT_SPECULATIVE_TOKENS = {"draft-model": 3, "mtp": 1}
# A draft model about a tenth of the target's size (Llama 3.2 1B for 8B, Llama 3.1 8B for 70B):
# its weights, its cache and each of its k steps cost that share of the target's.
DRAFT_PARAMS_SHARE = 0.1


@dataclass(frozen=True, slots=True)
class Speculation:
    """How a replica proposes and verifies: ``tokens`` guesses a step, each kept with ``acceptance``."""

    method: str  # draft-model | mtp
    acceptance: float
    tokens: int

    @property
    def expected_tokens(self) -> float:
        """Tokens a verify step yields on average: (1 − a^(k+1)) / (1 − a) (Leviathan et al. 2023)."""
        a, k = self.acceptance, self.tokens
        if a >= 1.0:
            return float(k + 1)
        return (1.0 - a ** (k + 1)) / (1.0 - a)

    @property
    def verify_width(self) -> int:
        """Positions a verify step multiplies per sequence: the k guesses and the model's own token."""
        return self.tokens + 1

    def proposer_share(self, arch: DecoderArchitecture) -> float:
        """The proposer's size as a share of the model's: a draft model, or MTP's one extra layer."""
        return DRAFT_PARAMS_SHARE if self.method == "draft-model" else 1.0 / arch.num_layers

    def proposer_steps(self) -> int:
        """Sequential proposer passes a verify step waits for (an MTP head proposes its k at once
        when k is 1, as DeepSeek-V3's single module does; each further token is one more pass)."""
        return self.tokens

    def describe(self) -> str:
        return (
            f"{self.method} speculative decoding, {self.tokens} token(s) proposed a step, acceptance "
            f"{self.acceptance:g} → {self.expected_tokens:.2f} tokens per verify step"
        )


def speculation(method: str | None, acceptance: float | None, tokens: int | None) -> Speculation | None:
    """The speculative decoding asked for (None when ``method`` is None), checked."""
    if method is None:
        if acceptance is not None or tokens is not None:
            raise PerdollarError(
                "--acceptance and --speculative-tokens mean something only with speculative decoding",
                "add --speculative draft-model (or mtp)",
            )
        return None
    key = method.strip().lower()
    if key not in SPECULATIVE_METHODS:
        raise PerdollarError(
            f"unknown speculative decoding method {method!r}", f"use one of {', '.join(SPECULATIVE_METHODS)}"
        )
    rate = DEFAULT_ACCEPTANCE if acceptance is None else float(acceptance)
    if not 0.0 <= rate <= 1.0:
        raise PerdollarError(
            f"acceptance {rate:g} is not a probability", "give --acceptance between 0 and 1, e.g. 0.7"
        )
    count = DEFAULT_SPECULATIVE_TOKENS[key] if tokens is None else int(tokens)
    if count < 1:
        raise PerdollarError(f"--speculative-tokens {count} proposes nothing", "give 1 or more, e.g. 3")
    return Speculation(key, rate, count)


def checked_speculation(spec: Speculation | None, arch: DecoderArchitecture) -> Speculation | None:
    """``spec`` when the model can run it; MTP proposes with the model's own multi-token-prediction
    modules, so a model whose config ships none (Llama, Qwen 2.5 …) is refused naming what applies."""
    if spec is None or spec.method != "mtp" or arch.mtp_layers:
        return spec
    applies = ", ".join(method for method in SPECULATIVE_METHODS if method != "mtp")
    raise PerdollarError(
        f"{arch.name} has no multi-token-prediction head (its config states no num_nextn_predict_layers "
        f"or mtp_num_hidden_layers); speculative methods for it: {applies}",
        f"use --speculative {applies.split(', ')[0]}, or a model with MTP modules (deepseek-v3)",
    )


def checked_prefix_share(share: float | None) -> float:
    """The share of every prompt served from the prefix cache (0 when not given), checked."""
    if share is None:
        return 0.0
    if not 0.0 <= share < 1.0:
        raise PerdollarError(
            f"prefix share {share:g} is outside [0, 1)",
            "give the share of each prompt already cached, e.g. --prefix-share 0.5",
        )
    return float(share)


def feature_notes(prefix_share: float, spec: Speculation | None, *, moe: bool) -> tuple[str, ...]:
    """What a deployment search assumed of the engine's features, a line each."""
    notes = []
    if prefix_share:
        notes.append(
            f"prefix caching: {prefix_share:.0%} of every prompt served from the cache (its prefill "
            "skipped, its KV blocks held once per replica)"
        )
    if spec is not None:
        notes.append(spec.describe() + " (Leviathan et al. 2023)")
    if moe:
        notes.append(
            "a mixture-of-experts model is also tried expert parallel over each replica's GPUs "
            "(attention data parallel); each row keeps the faster layout (column expert_parallel)"
        )
    return tuple(notes)
