"""Would a learned correction per GPU, on top of the model, carry to measurements of another publisher?

    python3 benchmarks/per_gpu_correction.py SHARED_DATA_DIR [--ridge 1 3 10 30]

NeuSight-style predictors learn a factor per GPU. Here each GPU gets one log factor fitted to the
shipped model's calibrated pair errors (log actual/predicted ≈ factor(target) − factor(anchor),
shrunk towards 0 by a ridge penalty, errors clipped at ±0.4 so one odd table does not set it)
on every collection of the development set but one, and corrects that collection's pairs. If the
GPUs' quirks were the boards' own, the corrected errors would fall; if they belong to a
publisher's hosts and software, they rise. The model's global parameters saw every collection
(in sample), which flatters both columns alike.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import scipy.sparse as sparse
from scipy.sparse.linalg import lsqr

from development_args import parse_development_args  # this folder: the shared command line
from perdollar.predict.lab.evaluation import ape_summary
from perdollar.predict.lab.fit import FitResult, predict_pairs


def gpu_factors(
    anchor: np.ndarray, target: np.ndarray, log_error: np.ndarray, n_gpus: int, ridge: float
) -> np.ndarray:
    """Least-squares factors with log_error ≈ f[target] − f[anchor] and a ridge towards 0."""
    n = len(log_error)
    pairs = sparse.csr_matrix(
        (np.r_[np.ones(n), -np.ones(n)], (np.r_[np.arange(n), np.arange(n)], np.r_[target, anchor])),
        shape=(n, n_gpus),
    )
    design = sparse.vstack([pairs, ridge * sparse.identity(n_gpus)]).tocsr()
    return lsqr(design, np.r_[np.clip(log_error, -0.4, 0.4), np.zeros(n_gpus)])[0]


def main() -> None:
    started = time.perf_counter()
    args, development = parse_development_args(
        __doc__,
        lambda parser: parser.add_argument("--ridge", type=float, nargs="+", default=[1.0, 3.0, 10.0, 30.0]),
    )
    cases, pairs = development.cases, development.pairs
    held = predict_pairs(cases, pairs, FitResult.shipped())
    held = held[np.isfinite(held["calibrated"]) & (held["calibrated"] > 0)].reset_index(drop=True)
    collection = cases.rows["file"].astype(str).to_numpy()[held["case_target"].to_numpy()]
    codes, gpus = pd.factorize(pd.concat([held["gpu_anchor"], held["gpu_target"]]))
    anchor, target = codes[: len(held)], codes[len(held) :]
    log_error = np.log(held["actual"] / held["calibrated"]).to_numpy()
    traced = held["reference"].to_numpy()
    print(f"{len(held)} pairs in {len(set(collection))} collections, shipped parameters (in sample)")
    for ridge in args.ridge:
        corrected = held["calibrated"].to_numpy().copy()
        for name in sorted(set(collection)):
            inside = collection == name
            f = gpu_factors(anchor[~inside], target[~inside], log_error[~inside], len(gpus), ridge)
            corrected[inside] *= np.exp(f[target[inside]] - f[anchor[inside]])
        for label, mask in (("traced", traced), ("all pairs", np.ones(len(held), bool))):
            before = ape_summary(held["calibrated"][mask], held["actual"][mask])
            after = ape_summary(corrected[mask], held["actual"][mask])
            print(
                f"  ridge {ridge:<5g} {label:<10} n={before['n']:<5} "
                f"model {100 * before['median_ape']:.1f}% / {100 * before['mean_ape']:.1f}%   "
                "with per-GPU factors from the other collections "
                f"{100 * after['median_ape']:.1f}% / {100 * after['mean_ape']:.1f}%"
            )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
