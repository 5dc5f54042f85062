"""Predictions for GPUs that no row of the development set measured, against what others published.

    python3 benchmarks/unseen_gpu_check.py SHARED_DATA_DIR [benchmarks/published_unseen_rows.csv]

The rows file holds published single-GPU figures of GPUs absent from ``published_dev.csv``, each
written as a row of the same source and software era as development rows it can pair with:

- K80: the Google Compute Engine tables of TensorFlow's 2017 benchmark page (the development set
  holds the same page's DGX-1 P100 rows).
- RTX 4090 and RTX 6000 Ada: Lambda's PyTorch training tables (``pytorch/pytorch-train-
  throughput-fp16.csv`` and ``-fp32.csv`` of lambdal/deeplearning-benchmark), at the same
  per-GPU batch as the RTX 3090 and RTX A6000 rows of the v1 era (Lambda's batch tables), whose
  PyTorch version they are assumed to share.
- RTX 2080, Titan V and TITAN Xp: the FP32 single-GPU table of Lambda's blog post "RTX 2080 Ti
  Deep Learning Benchmarks with TensorFlow" (March 2019, TensorFlow 1.12), whose other columns
  (RTX 2080 Ti, TITAN RTX, V100, GTX 1080 Ti) are the anchors. The post does not give the batch;
  64 per GPU is assumed (at 32, the calibrated errors are about 3 points higher).

Each group (its GPUs' rows, and any other rows of the same sources) is appended to the
development set and run through ``perdollar validate`` with that group's GPUs as targets: the
shipped parameters never saw a row of them, so they predict every target row as they are, from
each other GPU that measured the same configuration. Nothing of these rows is fitted. Prints each
group's calibrated and spec-only errors and the naive baselines on the same pairs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

from perdollar import catalog
from perdollar.predict.lab.evaluation import summary_line
from perdollar.predict.lab.validate import run_validation

GROUPS = {
    "K80 (TensorFlow 2017 page)": ["K80"],
    "Ada (Lambda PyTorch v1)": ["RTX 4090", "RTX 6000 Ada"],
    "Turing, Volta and Pascal boards (Lambda blog 2019, TF 1.12, fp32)": ["RTX 2080", "TITAN V", "TITAN Xp"],
}
DEFAULT_ROWS = Path(__file__).with_name("published_unseen_rows.csv")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="folder with measurements/published_dev.csv")
    parser.add_argument("rows", nargs="?", type=Path, default=DEFAULT_ROWS)
    args = parser.parse_args(argv)
    dev_path = args.data_dir / "measurements" / "published_dev.csv"
    for path in (dev_path, args.rows):
        if not path.is_file():
            sys.exit(f"error: {path} does not exist; pass the shared data folder (and the rows CSV)")
    dev = pd.read_csv(dev_path, dtype=str, keep_default_na=False)
    unseen = pd.read_csv(args.rows, dtype=str, keep_default_na=False)
    cat = catalog.load()
    with tempfile.TemporaryDirectory() as scratch:
        for name, gpus in GROUPS.items():
            combined = Path(scratch) / "combined.csv"
            sources = set(unseen.loc[unseen["gpu"].isin(gpus), "source"])
            pd.concat([dev, unseen[unseen["source"].isin(sources)]]).to_csv(combined, index=False)
            result = run_validation(combined, cat, gpus)
            print(f"{name}: {', '.join(gpus)}")
            print(summary_line("calibrated, traced workloads", result["calibrated"]))
            print(summary_line("spec only, same rows", result["spec_only"]))
            print(summary_line("calibrated, fallback profile", result["fallback"]["calibrated"]))
            print(summary_line("calibrated, all pairs", result["calibrated_all"]))
            for baseline, summary in result["baselines"].items():
                print(summary_line(f"baseline: {baseline.replace('_', ' ')}", summary))


if __name__ == "__main__":
    main()
