"""How well predictions order GPUs: per-workload rank correlation and pairwise order by gap.

Both read a frame of anchor→target predictions (``predict_pairs`` or a held-out evaluation):
``pair_key``, ``gpu_anchor``, ``gpu_target``, ``anchor_value``, ``calibrated``, ``actual``.
A user meets a ranking with one GPU measured (the anchor, at its measured value) and every other
GPU of the workload predicted from it; both metrics score exactly that view, one anchor at a time.
(Averaging each target's predictions over all anchors first would rank two near-identical GPUs
backwards by construction: each one's prediction leans on the other's measurement.)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from perdollar.predict.lab.evaluation import spearman

# Bounds of the gap buckets: the faster GPU's published throughput over the slower one's.
GAP_EDGES = (1.0, 1.05, 1.1, 1.25, 1.5, 2.0, float("inf"))


def _views(held: pd.DataFrame) -> Iterator[tuple[str, np.ndarray, np.ndarray]]:
    """(workload, predicted, actual) of every GPU in one anchor's view, the anchor included."""
    columns = held[["pair_key", "gpu_anchor", "gpu_target", "anchor_value", "calibrated", "actual"]]
    # One prediction per target in a view (the first, should a frame repeat a pair).
    columns = columns.drop_duplicates(["pair_key", "gpu_anchor", "gpu_target"])
    for (key, _), view in columns.groupby(["pair_key", "gpu_anchor"], sort=True):
        anchor_value = float(view["anchor_value"].iloc[0])
        predicted = np.append(view["calibrated"].to_numpy(dtype=float), anchor_value)
        actual = np.append(view["actual"].to_numpy(dtype=float), anchor_value)
        yield str(key), predicted, actual


def rank_correlation_by_workload(held: pd.DataFrame, min_gpus: int = 3) -> pd.Series:
    """Spearman correlation of predicted and published GPU order, per workload (mean over anchors).

    Workloads measured on fewer than ``min_gpus`` GPUs are left out: two GPUs give ±1 only.
    """
    per_workload: dict[str, list[float]] = {}
    for key, predicted, actual in _views(held):
        if len(actual) < min_gpus:
            continue
        rho = spearman(predicted, actual)
        if np.isfinite(rho):
            per_workload.setdefault(key, []).append(rho)
    return pd.Series({key: float(np.mean(rhos)) for key, rhos in per_workload.items()}, dtype=float)


def order_agreement_by_gap(
    held: pd.DataFrame, edges: Sequence[float] = GAP_EDGES, min_gpus: int = 3
) -> pd.DataFrame:
    """Share of GPU pairs that the predictions put in the published order, by how far apart they are.

    Every two GPUs of one anchor's view form a pair; its gap is the faster one's published throughput
    over the slower one's. A tie in the predictions counts as disagreement. Rows: one per gap bucket
    (``low``, ``high``, ``pairs``, ``agree``). It separates rank errors between GPUs that publish
    within a few percent of each other (near-coin-flips for any model) from real misorderings.
    """
    gaps, agrees = [], []
    for _, predicted, actual in _views(held):
        if len(actual) < min_gpus:
            continue
        for i, j in itertools.combinations(range(len(actual)), 2):
            if actual[i] == actual[j]:
                continue
            gaps.append(max(actual[i], actual[j]) / min(actual[i], actual[j]))
            agrees.append(bool(np.sign(predicted[i] - predicted[j]) == np.sign(actual[i] - actual[j])))
    frame = pd.DataFrame({"gap": gaps, "agree": agrees})
    rows = []
    for low, high in itertools.pairwise(edges):
        inside = frame[(frame["gap"] >= low) & (frame["gap"] < high)]
        rows.append(
            {
                "low": low,
                "high": high,
                "pairs": len(inside),
                "agree": float(inside["agree"].mean()) if len(inside) else np.nan,
            }
        )
    return pd.DataFrame(rows)
