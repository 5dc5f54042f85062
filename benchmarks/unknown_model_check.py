"""How well are published models predicted that the fit never saw? Leave one model out.

    python3 benchmarks/unknown_model_check.py SHARED_DATA_DIR

A published row whose model perdollar cannot trace is predicted with the fallback profile, whose
descriptor (bytes per FLOP, launches per step) is fitted per model name. A model of a new file has
none, and borrows one from fitted models measured alike (``predict/fallback.py``). Here each fitted
model in turn is treated as unknown: its descriptor is removed from the shipped parameters and its
pairs are predicted with the borrowed one. The global parameters saw every model (in sample); the
descriptor, which is what is tested, did not. Prints the errors over all such pairs and per model,
next to the errors with the model's own descriptor.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pandas as pd

from development_args import parse_development_args  # this folder: the shared command line
from perdollar.predict.lab.evaluation import ape_summary, summary_line
from perdollar.predict.lab.fit import FitResult, predict_pairs


def main() -> None:
    started = time.perf_counter()
    _, development = parse_development_args(__doc__)
    cases, pairs = development.cases, development.pairs
    shipped = FitResult.shipped()
    family = cases.rows["family"].to_numpy()[pairs["case_target"].to_numpy()]
    own, borrowed = [], []
    for name in sorted(shipped.descriptors):
        chosen = pairs[family == name]
        if chosen.empty:
            continue
        without = {k: v for k, v in shipped.descriptors.items() if k != name}
        own.append(predict_pairs(cases, chosen, shipped).assign(family=name))
        borrowed.append(predict_pairs(cases, chosen, dataclasses.replace(shipped, descriptors=without)))
    known, unknown = pd.concat(own, ignore_index=True), pd.concat(borrowed, ignore_index=True)
    print(f"{len(known['family'].unique())} fallback models, {len(known)} anchor→target pairs")
    print(summary_line("own descriptor (in sample)", ape_summary(known["calibrated"], known["actual"])))
    print(
        summary_line(
            "model unknown: borrowed descriptor", ape_summary(unknown["calibrated"], unknown["actual"])
        )
    )
    print("  per model, median APE: own → borrowed")
    error = np.abs(unknown["calibrated"].to_numpy() / unknown["actual"].to_numpy() - 1)
    for name, rows in known.assign(borrowed=error).groupby("family"):
        mine = np.median(np.abs(rows["calibrated"] / rows["actual"] - 1))
        theirs = np.median(rows["borrowed"])
        print(f"    {name[:70]:<70} n={len(rows):<5} {100 * mine:5.1f}% → {100 * theirs:5.1f}%")
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
