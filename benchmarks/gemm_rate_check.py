"""The roofline's GEMM rates against PyTorch matmul rates others published, GPU by GPU.

    python3 benchmarks/gemm_rate_check.py [benchmarks/published_gemm_rates.csv]

Each row of the CSV is one published ``torch.matmul`` rate (square matrices, TFLOPS) on one GPU
and dtype (``fp32`` = PyTorch's default exact fp32, ``tf32`` = with TF32 allowed). The model's
rate for the same GEMM (the row's size, 8192 where the row gives the best of several sizes; back
to back, so launch and framework time are left out) comes
from the shipped fit's efficiencies and the catalog's datasheet peaks: nothing of these rows is
fitted. GPUs that are not in the development set the fit saw are marked "unseen". Prints one
line per row, then the median and mean absolute error per dtype and for the unseen GPUs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import pandas as pd

from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.params import ModelParams, shipped_model
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import DeviceTable, OperatorTable
from perdollar.profile.model import OperatorRecord

SIZE = 8192
DEFAULT_CSV = Path(__file__).with_name("published_gemm_rates.csv")


def modelled_tflops(
    accelerator: catalog.Accelerator, dtype: str, size: int = SIZE, params: ModelParams | None = None
) -> float:
    element = 2.0 if dtype in ("fp16", "bf16") else 4.0
    gemm = OperatorRecord(
        "aten.mm", "matmul", "forward", 2.0 * size**3, 2 * element * size**2, element * size**2, dtype,
        count=1, gemm_mnk=(size, size, size),
    )  # fmt: skip
    params = params or shipped_model().params
    times = operator_times(
        DeviceTable.from_accelerators([accelerator]), OperatorTable.from_operators([gemm]), params
    )
    return gemm.flops / float(times.bound[0, 0]) / 1e12


def summary(errors: list[float]) -> str:
    absolute = [abs(e) for e in errors]
    return (
        f"n={len(errors):>2}  median |error| {statistics.median(absolute):5.1%}  "
        f"mean {statistics.fmean(absolute):5.1%}  median signed {statistics.median(errors):+6.1%}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    args = parser.parse_args(argv)
    if not args.csv.is_file():
        sys.exit(f"error: {args.csv} does not exist; pass a CSV with accelerator,dtype,tflops columns")
    rows = pd.read_csv(args.csv)
    cat = catalog.load()
    seen = set(shipped_model().provenance.get("fitted_accelerators", []))
    by_dtype: dict[str, list[float]] = {}
    unseen: list[float] = []
    header = f"{'accelerator':<16} {'dtype':<5} {'size':>6} {'published':>10} {'modelled':>10} {'error':>7}"
    print(f"{header}  in fit")
    for row in rows.itertuples():
        try:
            accelerator = cat.accelerator(str(row.accelerator))
        except PerdollarError as error:
            sys.exit(f"error: {args.csv}: {error}")
        size = int(row.matrix_size) if str(row.matrix_size).isdigit() else SIZE
        modelled = modelled_tflops(accelerator, str(row.dtype), size)
        error = modelled / float(row.tflops) - 1.0
        by_dtype.setdefault(str(row.dtype), []).append(error)
        if accelerator.key not in seen:
            unseen.append(error)
        print(
            f"{accelerator.key:<16} {row.dtype:<5} {size:>6} {row.tflops:>8.1f} TF {modelled:>7.1f} TF"
            f" {error:>+7.1%}  {'seen' if accelerator.key in seen else 'unseen'}"
        )
    print()
    for dtype, errors in by_dtype.items():
        print(f"{dtype:<6} {summary(errors)}")
    if unseen:
        print(f"unseen {summary(unseen)}")
    print(f"all    {summary([e for errors in by_dtype.values() for e in errors])}")


if __name__ == "__main__":
    main()
