"""How much of a causal sequence's score matrix a fused attention kernel computes.

PyTorch's flop counter, which the traced layer's attention FLOPs come from, counts the whole
matrix whatever the mask. cuDNN's fused causal attention (Transformer Engine's, on Hopper) steps
over query and key blocks and skips those above the diagonal, as FlashAttention-3's kernels do.
"""

from __future__ import annotations

import math

from perdollar.workload.llm.architecture import DecoderArchitecture

# Rows of the query and key blocks the native kernels step over: 128, as FlashAttention-3's
# (Shah et al. 2024, section 4.1).
CAUSAL_BLOCK_ROWS = 128


def causal_block_share(seq_len: int) -> float:
    """Share of a sequence's full score matrix a fused causal kernel computes: the blocks on and
    below the diagonal, n(n + 1)/2 of n² for n blocks a side."""
    blocks = max(math.ceil(seq_len / CAUSAL_BLOCK_ROWS), 1)
    return (blocks + 1) / (2 * blocks)


def skipped_attention_flops(
    arch: DecoderArchitecture, seq_len: int, finetune: str = "full", attention_kernel: str = "flash2"
) -> float:
    """FLOPs a token the native kernel skips of what the 6·N + full-attention convention counts
    (``perdollar.predict.llm.step.MFU_CONVENTION``): 0 for the other kernels."""
    if attention_kernel != "native":
        return 0.0
    passes = 3.0 if finetune == "full" else 2.0  # forward, activation gradient, weight gradient
    attention = passes * 4 * arch.num_layers * arch.num_attention_heads * arch.head_dim * seq_len
    return attention * (1.0 - causal_block_share(seq_len))
