"""Where the ROCm share of the roofline's efficiencies comes from, and how the model meets it.

    python3 benchmarks/rocm_check.py [benchmarks/published_rocm_comparisons.csv]

The development set has no AMD chip, so ``rocm_efficiency`` is read from what others published:
PyTorch matmul rates of an MI210 (``published_gemm_rates.csv``) and MI300X-against-NVIDIA ratios
of whole workloads (the CSV above). For each, the model's prediction with the CUDA-fitted
efficiencies (share 1) gives the share that ROCm reached: published / modelled. A workload marked
``compute`` is compared with the model's ratio of large GEMMs at its dtype; one marked ``mixed``
with the geometric middle of the GEMM ratio and the large-copy ratio. Prints each implied share,
their geometric mean (one value per source), and the error of every row with the shipped share.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd

from gemm_rate_check import DEFAULT_CSV as GEMM_CSV
from gemm_rate_check import modelled_tflops
from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.params import ROCM_SHARE_RANGE, ModelParams, shipped_model
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import DeviceTable, OperatorTable
from perdollar.profile.model import OperatorRecord

DEFAULT_CSV = Path(__file__).with_name("published_rocm_comparisons.csv")
COPY_BYTES = 2**30
COLUMNS = ("comparison", "amd_accelerator", "nvidia_accelerator", "dtype", "bound", "amd_over_nvidia")


def copy_rate(accelerator: catalog.Accelerator, params: ModelParams) -> float:
    """Modelled bytes per second (read + write) of a 1 GiB device-to-device copy."""
    copy = OperatorRecord("aten.copy_", "copy", "forward", 0.0, COPY_BYTES, COPY_BYTES, "fp16")
    times = operator_times(
        DeviceTable.from_accelerators([accelerator]), OperatorTable.from_operators([copy]), params
    )
    return 2 * COPY_BYTES / float(times.bound[0, 0])


def modelled_ratio(amd: catalog.Accelerator, nvidia: catalog.Accelerator, dtype: str, bound: str,
                   params: ModelParams) -> float:  # fmt: skip
    gemm = modelled_tflops(amd, dtype, params=params) / modelled_tflops(nvidia, dtype, params=params)
    if bound == "compute":
        return gemm
    return math.sqrt(gemm * copy_rate(amd, params) / copy_rate(nvidia, params))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    args = parser.parse_args(argv)
    for path in (args.csv, GEMM_CSV):
        if not path.is_file():
            sys.exit(f"error: {path} does not exist; pass the comparisons CSV of this folder")
    table = pd.read_csv(args.csv)
    missing = sorted(set(COLUMNS) - set(table.columns))
    if missing:
        sys.exit(f"error: {args.csv} lacks column(s) {', '.join(missing)}; see {DEFAULT_CSV.name}")
    unknown = sorted(set(table["bound"]) - {"compute", "mixed"})
    if unknown:
        sys.exit(f"error: {args.csv}: bound must be 'compute' or 'mixed', not {', '.join(map(str, unknown))}")
    cat = catalog.load()
    shipped = shipped_model().params
    cuda_fitted = replace(shipped, rocm_efficiency=1.0)
    try:
        gemm_rows = pd.read_csv(GEMM_CSV)
        amd_gemms = [
            (row, cat.accelerator(str(row.accelerator)))
            for row in gemm_rows.itertuples()
            if cat.accelerator(str(row.accelerator)).software_stack == "rocm"
        ]
        comparisons = [
            (row, cat.accelerator(row.amd_accelerator), cat.accelerator(row.nvidia_accelerator))
            for row in table.itertuples()
        ]
    except PerdollarError as error:
        sys.exit(f"error: {args.csv}: {error}")

    shares: list[float] = []
    print("PyTorch matmul on AMD (published TFLOPS / modelled with the CUDA-fitted efficiencies):")
    gemm_shares = []
    for row, chip in amd_gemms:
        at_one = modelled_tflops(chip, str(row.dtype), params=cuda_fitted)
        shipped_rate = modelled_tflops(chip, str(row.dtype), params=shipped)
        gemm_shares.append(float(row.tflops) / at_one)
        print(
            f"  {chip.key:<8} {row.dtype:<5} published {row.tflops:6.1f} TF, modelled {at_one:6.1f} TF"
            f" → share {gemm_shares[-1]:.2f}; with the shipped {shipped.rocm_efficiency:.2f}:"
            f" {shipped_rate / float(row.tflops) - 1:+.1%}"
        )
    if gemm_shares:
        shares.append(math.exp(sum(map(math.log, gemm_shares)) / len(gemm_shares)))
    print("\nWorkloads, AMD over NVIDIA (published / modelled with the CUDA-fitted efficiencies):")
    for row, amd, nvidia in comparisons:
        at_one = modelled_ratio(amd, nvidia, row.dtype, row.bound, cuda_fitted)
        error = modelled_ratio(amd, nvidia, row.dtype, row.bound, shipped) / float(row.amd_over_nvidia) - 1
        shares.append(float(row.amd_over_nvidia) / at_one)
        print(
            f"  {row.comparison}: {amd.key} / {nvidia.key} published {row.amd_over_nvidia:.2f},"
            f" modelled {at_one:.2f} ({row.bound}) → share {shares[-1]:.2f};"
            f" with the shipped {shipped.rocm_efficiency:.2f}: {error:+.1%}"
        )
    middle = math.exp(sum(map(math.log, shares)) / len(shares))
    print(
        f"\nimplied shares {min(shares):.2f}–{max(shares):.2f}, geometric mean {middle:.2f}"
        f" over {len(shares)} sources; shipped rocm_efficiency {shipped.rocm_efficiency:.2f},"
        f" band spread {ROCM_SHARE_RANGE[0]:.2f}–{ROCM_SHARE_RANGE[1]:.2f}"
    )


if __name__ == "__main__":
    main()
