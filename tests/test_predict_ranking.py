"""Rank metrics of predictions: per-workload Spearman and pairwise order by published gap."""

from __future__ import annotations

import pandas as pd
import pytest

from perdollar.predict.lab.ranking import order_agreement_by_gap, rank_correlation_by_workload


def _held(key: str, actual: dict[str, float], predicted_from: dict[str, dict[str, float]]) -> pd.DataFrame:
    """Pairs of one workload: for each anchor, its predictions of every other GPU."""
    rows = []
    for anchor, predictions in predicted_from.items():
        for target, value in predictions.items():
            rows.append(
                {
                    "pair_key": key,
                    "gpu_anchor": anchor,
                    "gpu_target": target,
                    "anchor_value": actual[anchor],
                    "calibrated": value,
                    "actual": actual[target],
                }
            )
    return pd.DataFrame(rows)


ACTUAL = {"slow": 100.0, "mid": 103.0, "fast": 300.0}


def test_rank_correlation_scores_each_anchor_view_and_averages_them() -> None:
    in_order = _held("w", ACTUAL, {"slow": {"mid": 110.0, "fast": 290.0}})
    assert rank_correlation_by_workload(in_order)["w"] == pytest.approx(1.0)
    # From "fast", mid is predicted below slow's published 100: one swap among three GPUs.
    swapped = _held("w", ACTUAL, {"fast": {"slow": 100.0, "mid": 95.0}})
    assert rank_correlation_by_workload(swapped)["w"] == pytest.approx(0.5)
    both = pd.concat([in_order, swapped])
    assert rank_correlation_by_workload(both)["w"] == pytest.approx(0.75)


def test_rank_correlation_leaves_out_workloads_with_two_gpus() -> None:
    two = _held("pair", {"a": 1.0, "b": 2.0}, {"a": {"b": 1.5}})
    assert rank_correlation_by_workload(two).empty


def test_order_agreement_puts_each_gpu_pair_in_the_bucket_of_its_published_gap() -> None:
    # From "fast": slow/mid (gap 1.03) swapped, slow/fast and mid/fast (gap ~3) in order.
    held = _held("w", ACTUAL, {"fast": {"slow": 100.0, "mid": 95.0}})
    table = order_agreement_by_gap(held).set_index("low")
    assert table.loc[1.0, "pairs"] == 1 and table.loc[1.0, "agree"] == 0.0
    assert table.loc[2.0, "pairs"] == 2 and table.loc[2.0, "agree"] == 1.0
    assert table["pairs"].sum() == 3


def test_order_agreement_counts_a_predicted_tie_as_disagreement() -> None:
    held = _held("w", ACTUAL, {"fast": {"slow": 100.0, "mid": 100.0}})
    table = order_agreement_by_gap(held).set_index("low")
    assert table.loc[1.0, "agree"] == 0.0
