"""perdollar's predictions now against the GPU measurements in benchmarks/gpu_measured.csv.

    python3 benchmarks/gpu_compare.py benchmarks/gpu_measured.csv
    python3 benchmarks/gpu_compare.py benchmarks/gpu_measured.csv --bench benchmarks/gpu_bench_h100.json

Every row is predicted from specs alone (the shipped fit, no measurement of the workload), and
then each GPU of the file is predicted from the others' measurements of the same workload
(calibrated), exactly as `perdollar validate FILE --target-gpus GPU --no-refit` does. Prints one
line per row and the summaries; absolute percentage errors of throughput. With --bench, the
traced peak memory of each workload is also set against the peak the bench measured
(``torch.cuda.max_memory_allocated`` of the step).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import pandas as pd

from perdollar import catalog
from perdollar.predict import predict_step_time
from perdollar.predict.lab.validate import run_validation
from perdollar.profile import profile_workload
from perdollar.workload import load_workload


def spec_prediction(row: pd.Series, cat: catalog.Catalog) -> float:
    kind = "train" if row["task"] == "train" else "inference"
    workload = load_workload(
        str(row["model"]), batch_size=int(row["batch_size"]), precision=row["precision"], kind=kind
    )
    estimate = predict_step_time(profile_workload(workload), cat.accelerator(str(row["gpu"])))
    return workload.batch_size / estimate.seconds


def summary(errors: list[float]) -> str:
    if not errors:
        return "n 0"
    absolute = [abs(e) for e in errors]
    median, mean, signed = statistics.median(absolute), statistics.fmean(absolute), statistics.median(errors)
    return f"n {len(errors)}, median {median:.1f}%, mean {mean:.1f}%, median signed {signed:+.1f}%"


def compare_memory(path: Path) -> None:
    print(f"peak memory of one step, traced against measured ({path.name}):")
    for measurement in json.loads(path.read_text()):
        if measurement.get("status") != "ok" or not measurement.get("peak_memory_bytes"):
            continue
        workload = load_workload(
            measurement["workload_name"],
            batch_size=measurement["batch_size"],
            precision=measurement["precision"],
        )
        traced, measured = profile_workload(workload).memory.total, float(measurement["peak_memory_bytes"])
        print(
            f"  {workload.name:13} batch {workload.batch_size:6d}: measured {measured / 2**30:6.2f} GiB, "
            f"traced {traced / 2**30:6.2f} GiB ({100 * (traced / measured - 1):+.0f}%)"
        )
    print()


def _ape(figures: dict) -> str:
    return (
        f"n {figures['n']}, median {100 * figures['median_ape']:.1f}%, mean {100 * figures['mean_ape']:.1f}%"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("measured", type=Path)
    parser.add_argument("--bench", type=Path, nargs="*", default=[], help="bench JSON files (memory check)")
    options = parser.parse_args()
    for path in (options.measured, *options.bench):
        if not path.is_file():
            parser.error(f"no such file: {path} (give benchmarks/gpu_measured.csv or a CSV in its schema)")
    for path in options.bench:
        compare_memory(path)
    cat = catalog.load()
    rows = pd.read_csv(options.measured)
    groups: dict[str, list[float]] = {"train": [], "inference, batch ≥ 16": [], "inference, batch < 16": []}
    print(f"{'gpu':16} {'workload':13} {'task':9} {'batch':>5} {'measured':>10} {'spec':>10} {'error':>7}")
    for _, row in rows.iterrows():
        predicted = spec_prediction(row, cat)
        error = 100 * (predicted / float(row["throughput"]) - 1)
        print(
            f"{row['gpu']:16} {row['model']:13} {row['task']:9} {int(row['batch_size']):5d} "
            f"{float(row['throughput']):10.4g} {predicted:10.4g} {error:+6.1f}%"
        )
        group = (
            "train"
            if row["task"] == "train"
            else "inference, batch " + ("≥ 16" if row["batch_size"] >= 16 else "< 16")
        )
        groups[group].append(error)
    print("\nspec only (signed error = predicted / measured − 1):")
    for name, errors in groups.items():
        print(f"  {name}: {summary(errors)}")
    print("\ncalibrated from the other GPU's measurement (perdollar validate --no-refit):")
    with tempfile.TemporaryDirectory() as scratch:  # validate reads a file; the data folder may be read-only
        for task, part in (("train", rows[rows.task == "train"]), ("inference", rows[rows.task != "train"])):
            path = Path(scratch) / f"{task}.csv"
            part.to_csv(path, index=False)
            for gpu in sorted(rows["gpu"].unique()):
                result = run_validation(path, cat, [gpu], refit=False)
                calibrated, spec = result["calibrated"], result["spec_only"]
                if calibrated["n"]:
                    print(f"  → {gpu}, {task}: calibrated {_ape(calibrated)} (spec only: {_ape(spec)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
