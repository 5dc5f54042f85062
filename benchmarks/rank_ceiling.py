"""How high can the GPU rank correlation go at a given error size, on these workloads?

    python3 benchmarks/rank_ceiling.py SHARED_DATA_DIR [--repeats 20]

The rank target (mean per-workload Spearman correlation ≥ 0.9, one GPU measured and the rest
predicted from it, as ``predict/ranking.py`` scores it) and the error targets are set
independently. This asks what the first costs in terms of the second: every calibrated prediction
of the development set's pairs is replaced by the published figure times a random error, and the
workloads are ranked as the real predictions are. Two kinds of error, each scaled so that the
median absolute percentage error over all pairs is the one in the row (as drawn):

- independent: a fresh error for every anchor→target pair;
- per GPU and workload: one error per (workload, target GPU), whichever GPU is the anchor,
  as a model's error on a board is (it does not depend on which board was measured).

No fit is involved; the figures depend only on how far apart the GPUs of each workload publish.
Prints the mean and spread over the repeats of the mean rank correlation for each error size,
next to the shipped model's own (in sample).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.optimize import brentq
from scipy.stats import norm

from development_args import parse_development_args  # this folder: the shared command line
from perdollar.predict.lab.evaluation import ape_summary
from perdollar.predict.lab.fit import FitResult, predict_pairs
from perdollar.predict.lab.ranking import rank_correlation_by_workload

MEDIAN_ERRORS = (0.025, 0.05, 0.075, 0.10, 0.15)


def _sigma_for_median_error(median_error: float) -> float:
    """σ of a log-normal error whose median |predicted / actual − 1| is ``median_error``."""

    def share_within(sigma: float) -> float:
        return float(norm.cdf(np.log1p(median_error) / sigma) - norm.cdf(np.log1p(-median_error) / sigma))

    return float(brentq(lambda sigma: share_within(sigma) - 0.5, 1e-6, 5.0))


def _log_errors(draw_of_pair: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    """One log error per pair, pairs with the same ``draw_of_pair`` index sharing theirs."""
    return rng.normal(0.0, sigma, draw_of_pair.max() + 1)[draw_of_pair]


def main() -> None:
    started = time.perf_counter()

    def add_options(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--repeats", type=int, default=20, help="draws per row (default 20)")

    args, development = parse_development_args(__doc__, add_options)
    if args.repeats < 1:
        raise SystemExit("error: --repeats must be at least 1")
    held = predict_pairs(development.cases, development.pairs, FitResult.shipped())
    own = rank_correlation_by_workload(held)
    model_error = ape_summary(held["calibrated"], held["actual"])["median_ape"]
    print(f"{len(held)} anchor→target pairs, {len(own)} workloads with at least 3 GPUs")
    print(
        f"  shipped model, in sample: median APE {100 * model_error:.1f}%, "
        f"mean rank correlation {own.mean():.3f} (median {own.median():.3f})"
    )
    print("  random errors of a given median APE → mean rank correlation (mean ± sd over repeats)")
    print(f"    {'median APE':>10}   {'independent per pair':>22}   {'per GPU and workload':>22}")
    per_pair = np.arange(len(held))
    per_gpu_and_workload = pd.factorize(
        held["pair_key"].astype(str) + "\x1f" + held["gpu_target"].astype(str)
    )[0]
    rng = np.random.default_rng(0)
    for median_error in MEDIAN_ERRORS:
        sigma = _sigma_for_median_error(median_error)
        cells, realised = [], []
        for draw_of_pair in (per_pair, per_gpu_and_workload):
            means = []
            for _ in range(args.repeats):
                noisy = held["actual"] * np.exp(_log_errors(draw_of_pair, sigma, rng))
                realised.append(float(np.median(np.abs(noisy / held["actual"] - 1.0))))
                means.append(rank_correlation_by_workload(held.assign(calibrated=noisy)).mean())
            cells.append(f"{np.mean(means):.3f} ± {np.std(means):.3f}")
        print(f"    {100 * np.mean(realised):9.1f}%   {cells[0]:>22}   {cells[1]:>22}")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
