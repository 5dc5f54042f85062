"""NxD Training on Trainium against Neuron's own published training tables, each release held out.

    PYTHONPATH=src python3 benchmarks/nxd_training_accuracy.py

Before: one achieved share of the bf16 peak for every plan and cluster (the geometric mean of the
other releases' rows, as the stack's record had it). After: perdollar.predict.nxd_trainium — a
compute share and a NeuronLink share fitted on the other releases, with each plan's tensor-parallel
collectives, pipeline bubble, data-parallel reduction over EFA and ZeRO-1 update. The error is
|predicted / published - 1| of the achieved share (so of sequences per second). The rows repeat a
few configurations release after release, so holding out a release leaves the same configurations
in the fit; holding out a model (printed last) is the harder test of how the plan terms carry.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from perdollar.catalog import load
from perdollar.catalog.model import Accelerator
from perdollar.predict.accelerator_stacks import TRAINING_STACKS, fit_fraction, model_flops_per_token
from perdollar.predict.nxd_trainium import FITTED_EFA_GBPS, NxdRun, PublishedRun, fit, predicted_share

ROWS = Path(__file__).with_name("published_nxd_training.csv")
CHIPS_PER_NODE = 16  # trn1.32xlarge and trn1n.32xlarge
CORES_PER_CHIP = 2  # Neuron's tables count tensor parallelism in NeuronCores


def published_runs(path: Path, accelerator: Accelerator) -> list[PublishedRun]:
    runs = []
    for row in csv.DictReader(path.open()):
        params, seq = float(row["params_b"]) * 1e9, int(row["seq_len"])
        layers, hidden = int(row["layers"]), int(row["hidden"])
        per_token = model_flops_per_token(params, layers, hidden, seq)
        nodes = int(row["nodes"])
        run = NxdRun(
            chips_per_node=CHIPS_PER_NODE, nodes=nodes,
            tensor_parallel=int(row["tensor_parallel_cores"]) // CORES_PER_CHIP,
            pipeline_parallel=int(row["pipeline_parallel"]), zero1=row["zero1"] == "1",
            micro_batch=int(row["micro_batch"]), global_batch=int(row["global_batch"]), seq_len=seq,
            params=params, layers=layers, hidden=hidden, network_gbps=FITTED_EFA_GBPS,
        )  # fmt: skip
        tokens_per_chip = float(row["sequences_per_s"]) * seq / run.chips
        achieved = tokens_per_chip * per_token / ((accelerator.peak_bf16_tflops or 0.0) * 1e12)
        runs.append(PublishedRun(f"Neuron {row['page_release']}", row["model"], run, achieved, per_token))
    return runs


def held_out(
    runs: list[PublishedRun], accelerator: Accelerator, key: Callable[[PublishedRun], str]
) -> dict[str, tuple[list[float], list[float]]]:
    """(before, after) errors of each group of rows, predicted from the fit of every other group."""
    errors: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for group in sorted({key(r) for r in runs}):
        held = [r for r in runs if key(r) == group]
        others = [r for r in runs if key(r) != group]
        single = fit_fraction(r.achieved for r in others)
        fitted = fit(others, accelerator)
        before, after = errors[group]
        for r in held:
            before.append(abs(single / r.achieved - 1.0))
            after.append(abs(predicted_share(fitted, r, accelerator) / r.achieved - 1.0))
    return errors


def report(title: str, errors: dict[str, tuple[list[float], list[float]]]) -> None:
    print(title)
    before_all: list[float] = []
    after_all: list[float] = []
    for group, (before, after) in errors.items():
        before_all += before
        after_all += after
        print(
            f"  {group:14s} rows {len(before):2d}  median {statistics.median(before):6.1%} -> "
            f"{statistics.median(after):6.1%}  max {max(before):6.1%} -> {max(after):6.1%}"
        )
    print(
        f"  {'all':14s} rows {len(before_all):2d}  median {statistics.median(before_all):6.1%} -> "
        f"{statistics.median(after_all):6.1%}  max {max(before_all):6.1%} -> {max(after_all):6.1%}"
    )


def main() -> None:
    trainium = load().accelerators["Trainium"]
    runs = published_runs(ROWS, trainium)
    everything = fit(runs, trainium)
    print("fit on every row:")
    print(f"  compute share of bf16 peak {everything.compute_share:.3f}; "
          f"NeuronLink share of its bandwidth {everything.link_share:.3f}")  # fmt: skip
    print(f"  one share for all (before): {fit_fraction(r.achieved for r in runs):.3f}")
    record = TRAINING_STACKS["neuron"].model_flops_fraction or 0.0
    old = [abs(record / r.achieved - 1.0) for r in runs]
    print(f"  the stack record's one share {record:.3f} on these rows: median {statistics.median(old):.1%}, "
          f"max {max(old):.1%}")  # fmt: skip
    report("leave-one-release-out error (|predicted/published - 1|), before -> after:",
           held_out(runs, trainium, lambda r: r.source))  # fmt: skip
    report("leave-one-model-out error, before -> after:", held_out(runs, trainium, lambda r: r.model))


if __name__ == "__main__":
    main()
