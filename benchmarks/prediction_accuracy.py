"""Held-out accuracy of perdollar's throughput prediction on published measurements.

    python benchmarks/prediction_accuracy.py SHARED_DATA_DIR [--by gpu|architecture|collection|none]

Every anchor→target pair of published_dev.csv is predicted by a fit that never saw the target
GPU (``--by gpu``, leave-one-GPU-out), any GPU of the target's architecture generation
(``--by architecture``) or any row of the target's collection (``--by collection``: one
publisher's tables held out whole, as a file of new measurements meets the shipped parameters).
Prints calibrated and spec-only errors, GPU rank correlation (and how
often two GPUs are put in the published order, by how far apart they publish), and the naive
baselines (bandwidth ratio, peak-FLOPS ratio, their geometric mean) on the same pairs.
``--by none`` predicts with the shipped parameters, whose fit saw every GPU: the in-sample error,
the floor that held-out errors are measured against (seconds instead of minutes).
"""

from __future__ import annotations

import time

import numpy as np

from development_args import parse_development_args  # this folder: the shared command line
from perdollar.predict.lab.evaluation import ape_summary, summary_line
from perdollar.predict.lab.fit import (
    FitResult,
    leave_one_collection_out,
    leave_one_gpu_out,
    predict_pairs,
)
from perdollar.predict.lab.ranking import order_agreement_by_gap, rank_correlation_by_workload
from perdollar.predict.lab.validate import baselines


def main() -> None:
    started = time.perf_counter()
    args, development = parse_development_args(
        __doc__,
        lambda parser: parser.add_argument(
            "--by", choices=("gpu", "architecture", "collection", "none"), default="gpu"
        ),
    )
    accelerators, aliases = development.accelerators, development.aliases
    cases, pairs = development.cases, development.pairs
    architecture = {gpu: accelerators[aliases[gpu]].architecture for gpu in set(cases.rows["gpu"])}
    group_of = (lambda gpu: architecture[gpu]) if args.by == "architecture" else None
    how = f"held out by {args.by}"
    if args.by == "none":
        how = "in sample (shipped parameters, fitted on every GPU)"
        held = predict_pairs(cases, pairs, FitResult.shipped())
    elif args.by == "collection":
        held = leave_one_collection_out(cases, pairs)
    else:
        held = leave_one_gpu_out(cases, pairs, group_of=group_of)
    ref, fb = held[held["reference"]], held[~held["reference"]]
    print(f"{how}: {len(held)} anchor→target pairs, {len(set(held['gpu_target']))} target GPUs")
    print(summary_line("calibrated, reference workloads", ape_summary(ref["calibrated"], ref["actual"])))
    print(summary_line("spec only, reference workloads", ape_summary(ref["spec"], ref["actual"])))
    print(summary_line("calibrated, fallback profile", ape_summary(fb["calibrated"], fb["actual"])))
    print(summary_line("calibrated, all pairs", ape_summary(held["calibrated"], held["actual"])))
    for name, summary in baselines(held, cases.rows, accelerators).items():
        print(summary_line(f"baseline: {name.replace('_', ' ')}", summary))
    rhos = rank_correlation_by_workload(held)
    print(
        "  GPU rank correlation per workload (Spearman, one GPU measured, the rest predicted): "
        f"mean {rhos.mean():.3f}, median {rhos.median():.3f} over {len(rhos)} workloads"
    )
    print("  GPU pairs put in the published order, by how far apart they publish:")
    for bucket in order_agreement_by_gap(held).itertuples():
        span = (
            f"{bucket.low:.2f}× – {bucket.high:.2f}×" if np.isfinite(bucket.high) else f"≥ {bucket.low:.2f}×"
        )
        print(f"    {span:<16} {bucket.pairs:>6} pairs  {100 * bucket.agree:5.1f}% in order")
    log_err = np.log(held["actual"] / held["calibrated"])
    q10, q90 = np.nanquantile(log_err, [0.1, 0.9])
    inside = np.mean((log_err >= q10) & (log_err <= q90))
    print(f"  80% band from these errors: [{np.exp(q10):.2f}×, {np.exp(q90):.2f}×] (covers {inside:.0%})")
    print("  per target GPU (calibrated, all pairs): median APE")
    for gpu, group in held.groupby("gpu_target"):
        s = ape_summary(group["calibrated"], group["actual"])
        print(f"    {gpu:<32} n={s['n']:<5} {100 * s['median_ape']:5.1f}%")
    if "collection" in held:
        print("  per held-out collection (calibrated, all pairs): median APE")
        for name, group in held.groupby("collection"):
            s = ape_summary(group["calibrated"], group["actual"])
            print(f"    {name:<32} n={s['n']:<5} {100 * s['median_ape']:5.1f}%")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
