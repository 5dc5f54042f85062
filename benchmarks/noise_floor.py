"""How close can any GPU model get to the development set's pairs? Free factors, fitted in sample.

    python3 benchmarks/noise_floor.py SHARED_DATA_DIR

A calibrated prediction multiplies the anchor's published figure by the model's ratio of the two
GPUs. Here that ratio comes from no model at all: every GPU gets one free factor per group of rows
(per GPU alone; per GPU and precision; per GPU, task and precision; …), and the factors are fitted
by least squares in log throughput on the very rows they then predict (each row also gets a free
level for its pairing group, so only ratios within a group count). Whatever a group's rows
disagree on beyond one factor per GPU is scatter that no predictor with that much freedom can
explain: the errors printed are floors for such predictors, in sample, on the same pairs
``prediction_accuracy.py`` scores (the GPU rank correlation per workload too). perdollar's model
is not one of these predictors (its ratios depend on the workload's profile and batch, not only
on the GPU), so the floors bound it only loosely; they say how much of its held-out error is the
rows' own scatter.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import scipy.sparse as sparse
from scipy.sparse.linalg import lsqr

from development_args import parse_development_args  # this folder: the shared command line
from perdollar.predict.lab.evaluation import Cases, ape_summary, summary_line
from perdollar.predict.lab.ranking import rank_correlation_by_workload

GROUPINGS = {
    "one factor per GPU": ["gpu"],
    "per GPU and precision": ["gpu", "precision"],
    "per GPU, task and precision": ["gpu", "task", "precision"],
    "per GPU, source, task and precision": ["gpu", "source_id", "task", "precision"],
    "per GPU and workload (any batch)": ["gpu", "source_id", "era", "model", "task", "precision", "seq"],
}


def _indicator(codes: np.ndarray) -> sparse.csr_matrix:
    n = len(codes)
    return sparse.csr_matrix((np.ones(n), (np.arange(n), codes)), shape=(n, int(codes.max()) + 1))


def oracle_predictions(cases: Cases, pairs: pd.DataFrame, columns: list[str]) -> np.ndarray:
    """Each pair's target predicted from its anchor by GPU factors fitted on all rows (in sample)."""
    rows = cases.rows
    log_rate = np.log(rows["per_gpu_throughput"].to_numpy(dtype=float))
    level = pd.factorize(rows["pair_key"])[0]
    factor = pd.factorize(rows[columns].astype(str).agg("¦".join, axis=1))[0]
    design = sparse.hstack([_indicator(level), _indicator(factor)]).tocsr()
    solution = lsqr(design, log_rate, atol=1e-12, btol=1e-12)[0]
    log_factor = solution[level.max() + 1 :][factor]
    anchor, target = pairs["case_anchor"].to_numpy(), pairs["case_target"].to_numpy()
    return np.exp(log_rate[anchor] - log_factor[anchor] + log_factor[target])


def main() -> None:
    started = time.perf_counter()
    _, development = parse_development_args(__doc__)
    cases, pairs = development.cases, development.pairs
    rate = cases.rows["per_gpu_throughput"].to_numpy(dtype=float)
    actual, anchor_value = rate[pairs["case_target"].to_numpy()], rate[pairs["case_anchor"].to_numpy()]
    traced = cases.is_reference[pairs["case_target"].to_numpy()]
    print(f"{len(pairs)} anchor→target pairs ({int(traced.sum())} of traced reference workloads)")
    for label, columns in GROUPINGS.items():
        predicted = oracle_predictions(cases, pairs, columns)
        print(label)
        print(summary_line("traced reference workloads", ape_summary(predicted[traced], actual[traced])))
        print(summary_line("all pairs", ape_summary(predicted, actual)))
        rhos = rank_correlation_by_workload(
            pairs.assign(anchor_value=anchor_value, calibrated=predicted, actual=actual)
        )
        print(f"  GPU rank correlation per workload: mean {rhos.mean():.3f}, median {rhos.median():.3f}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
