"""MaxText on TPU against MaxText's own published tables, each source held out.

    PYTHONPATH=src python3 benchmarks/maxtext_tpu_accuracy.py

Before: one achieved share of the bf16 peak for every TPU generation, slice count and plan (the
geometric mean of the other sources' rows). After: perdollar.predict.maxtext_tpu — each generation's
share, a loss per doubling of slices and the gradient all-reduce over DCN — fitted on the other
sources; a generation whose only source is held out takes the spec line of the others. The error is
|predicted / published - 1| of the achieved share (so of tokens per second), printed per source.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from perdollar.catalog import load
from perdollar.predict.accelerator_stacks import fit_fraction, model_flops_per_token
from perdollar.predict.maxtext_tpu import PublishedRun, SliceRun, fit, predicted_share

ROWS = Path(__file__).with_name("published_maxtext_tpu.csv")


def published_runs(path: Path, accelerators) -> list[PublishedRun]:
    runs = []
    for row in csv.DictReader(path.open()):
        params = float(row["params_b"]) * 1e9
        seq = float(row["seq_len"])
        layers, hidden = float(row["layers"] or 0), float(row["hidden"] or 0)
        per_token = model_flops_per_token(params, layers, hidden, seq)
        peak = accelerators[row["chip"]].peak_bf16_tflops or 0.0
        value = float(row["value"])
        if row["metric"] == "model_tflops_per_chip":
            achieved = value / peak
        else:  # tokens per second per chip
            achieved = value * per_token / (peak * 1e12)
        run = SliceRun(int(row["chips_per_slice"]), int(row["slices"]), params,
                       float(row["per_device_batch"]) * seq)  # fmt: skip
        runs.append(PublishedRun(row["source_url"], row["chip"], run, achieved, per_token))
    return runs


def short(source: str) -> str:
    return source.split("/blob/main/")[-1]


def main() -> None:
    accelerators = load().accelerators
    runs = published_runs(ROWS, accelerators)
    everything = fit(runs, accelerators)
    print("fit on every row:")
    for chip, value in sorted(everything.efficiency.items()):
        print(f"  {chip}: model-FLOPs share of bf16 peak on one slice {value:.3f}")
    line = f"{everything.spec_intercept:.3f} + {everything.spec_slope:.2e}·(TFLOPS per GB/s ×1000)"
    print(f"  slice loss per doubling {everything.slice_loss:.4f}; spec line 1/e = {line}")
    print(f"  one share for all (before): {fit_fraction(r.achieved for r in runs):.3f}")
    print("leave-one-source-out error (|predicted/published - 1|), before -> after:")
    before_all: list[float] = []
    after_all: list[float] = []
    for source in sorted({r.source for r in runs}):
        held = [r for r in runs if r.source == source]
        others = [r for r in runs if r.source != source]
        single = fit_fraction(r.achieved for r in others)
        fitted = fit(others, accelerators)
        by_chip: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
        for r in held:
            before, after = by_chip[r.chip]
            before.append(abs(single / r.achieved - 1.0))
            after.append(abs(predicted_share(fitted, r, accelerators) / r.achieved - 1.0))
        for chip, (before, after) in sorted(by_chip.items()):
            before_all += before
            after_all += after
            medians = f"median {statistics.median(before):6.1%} -> {statistics.median(after):6.1%}"
            print(
                f"  {short(source):42s} {chip:8s} rows {len(before):2d}  {medians}"
                f"  max {max(before):6.1%} -> {max(after):6.1%}"
            )
    print(
        f"  {'all':51s} rows {len(before_all):2d}  median {statistics.median(before_all):6.1%}"
        f" -> {statistics.median(after_all):6.1%}  max {max(before_all):6.1%} -> {max(after_all):6.1%}"
    )


if __name__ == "__main__":
    main()
