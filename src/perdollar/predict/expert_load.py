"""How unevenly routed tokens load expert-parallel ranks, and how much of a grouped product is padding.

Shared by the serving and the training models of mixture-of-experts layers.
"""

from __future__ import annotations

import math
from statistics import NormalDist

# Rows of one tile of a grouped expert product: vLLM's fused-MoE kernels take BLOCK_SIZE_M = 64
# once the batch exceeds the expert count, and for block-scaled fp8 (vLLM
# model_executor/layers/fused_moe/fused_moe.py, get_default_config), and 64 is the row count of
# Hopper's warpgroup matrix instruction (PTX ISA, wgmma.mma_async m64nNk16). An expert's rows fill
# whole tiles: on average half a tile is padding.
TILE_ROWS = 64
# Load imbalance without a load balancer: DeepSeek-R1's busiest expert-parallel rank received on
# average 1.564 times the mean more routed tokens than the mean, at EP 32 with 8 experts a rank and
# 1,024 rows a rank (TensorRT-LLM tech blog "Scaling Expert Parallelism in TensorRT-LLM, Part 1",
# Table 1, no EPLB). Rank loads are taken as normal around the mean: the busiest of R is
# z(R) standard deviations above it, and a rank's deviation comes from the experts' own skew
# (averaged over the experts it holds) and from the finite number of rows it receives. The skew
# below is the one that gives the published ratio at the published setting.
PUBLISHED_IMBALANCE = 1.564
PUBLISHED_RANKS, PUBLISHED_EXPERTS_PER_RANK, PUBLISHED_ROWS_PER_RANK = 32, 8, 1024


def busiest_of(ranks: int) -> float:
    """Expected maximum of ``ranks`` standard normal draws (Blom's approximation; 0 for one rank)."""
    if ranks <= 1:
        return 0.0
    return NormalDist().inv_cdf((ranks - 0.375) / (ranks + 0.25))


_PUBLISHED_CV = PUBLISHED_IMBALANCE / busiest_of(PUBLISHED_RANKS)
EXPERT_LOAD_SKEW = math.sqrt((_PUBLISHED_CV**2 - 1.0 / PUBLISHED_ROWS_PER_RANK) * PUBLISHED_EXPERTS_PER_RANK)


def tile_efficiency(rows_per_expert: float) -> float:
    """Share of a grouped product's multiplies that are real rows: m / (m + half a tile)."""
    rows = max(rows_per_expert, 0.0)
    return rows / (rows + TILE_ROWS / 2) if rows > 0 else 0.0
