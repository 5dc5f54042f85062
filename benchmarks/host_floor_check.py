"""How a step's host dispatch time and its device time combine, from gpu_host_floor.py's rows.

    python3 benchmarks/host_floor_check.py [benchmarks/gpu_host_floor_h100.csv]

For every measured point (a reference workload at a batch size, inference or training):
- kernels per step: the profile's launch count against the profiler's kernel count;
- how a step combines device and host time: the measured step against a soft maximum of the
  measured device and host times, (device^p + host^p)^(1/p), at several sharpnesses p;
- the host's time per kernel on this machine (measured host time / kernels);
- the modelled step (spec basis, shipped parameters: kernels, launch overhead and the fixed
  per-step framework time, no host floor) against the measured step, for points where the host
  bounds the step and where the device does.
Needs only the CSV (no GPU): the profiles are traced on the CPU.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np
import pandas as pd

from gpu_host_floor import COLUMNS  # this folder: the columns it writes
from perdollar import catalog
from perdollar.errors import PerdollarError
from perdollar.predict.params import shipped_model
from perdollar.predict.step import device_steps
from perdollar.predict.tables import OperatorTable
from perdollar.profile import profile_workload
from perdollar.workload import load_workload

DEFAULT_CSV = Path(__file__).with_name("gpu_host_floor_h100.csv")
GPU = "H100-SXM5-80GB"
SHARPNESSES = (2.0, 4.0, 8.0, 16.0)
SHOWN_SHARPNESS = 4.0


def soft_max(device: np.ndarray, host: np.ndarray, sharpness: float) -> np.ndarray:
    return (device**sharpness + host**sharpness) ** (1.0 / sharpness)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", type=Path, nargs="?", default=DEFAULT_CSV)
    options = parser.parse_args()
    if not options.csv.is_file():
        parser.error(f"{options.csv} not found: give a CSV written by benchmarks/gpu_host_floor.py")
    rows = pd.read_csv(options.csv)
    missing = set(COLUMNS) - set(rows.columns)
    if missing:
        parser.error(
            f"{options.csv} lacks columns {sorted(missing)}: write it with benchmarks/gpu_host_floor.py"
        )
    rows = rows.dropna(subset=["step_ms", "host_ms", "device_ms", "kernels"]).reset_index(drop=True)
    params = shipped_model().params
    accelerator = catalog.load().accelerator(GPU)
    launches, modelled = [], []
    for row in rows.itertuples():
        try:
            workload = load_workload(
                str(row.workload),
                batch_size=int(row.batch_size),
                precision=str(row.precision),
                kind=str(row.kind),
            )
        except PerdollarError as error:
            parser.error(f"{options.csv}, row {row.Index + 2}: {error}")
        profile = profile_workload(workload)
        launches.append(float(OperatorTable.from_profile(profile, params.gemm_tile).launches.sum()))
        modelled.append(float(device_steps(profile, [accelerator], params).seconds[0]) * 1e3)
    rows["profile_launches"] = launches
    rows["modelled_step_ms"] = modelled
    rows["host_us_per_kernel"] = rows["host_ms"] * 1e3 / rows["kernels"]

    print(
        f"{len(rows)} points of {options.csv.name} (milliseconds per step; 'law': soft maximum of "
        f"device and host at sharpness {SHOWN_SHARPNESS:g}; 'model': shipped parameters, spec basis)"
    )
    # fp16 training's loss scaler reads the overflow flag inside the step: its host time waits on
    # the GPU, so it is no dispatch time, and such points test neither the law nor the host rate.
    dispatch_only = ~((rows["kind"] == "train") & (rows["precision"] == "amp-fp16")).to_numpy()
    for sharp in SHARPNESSES:
        law = soft_max(rows["device_ms"].to_numpy(), rows["host_ms"].to_numpy(), sharp)
        error = np.abs(law / rows["step_ms"].to_numpy() - 1)[dispatch_only]
        rows[f"law_{sharp:g}"] = law
        print(
            f"  soft maximum at sharpness {sharp:>4g}: measured step within "
            f"{100 * np.median(error):.1f}% (median), {100 * np.mean(error):.1f}% (mean) "
            f"over {int(dispatch_only.sum())} points"
        )
    print(
        f"{'workload':10} {'kind':9} {'batch':>5}  {'kernels':>7} {'traced':>6}  {'device':>7} {'host':>7} "
        f"{'step':>7} {'law':>7}  {'model':>7} {'error':>7}"
    )
    for row in rows.itertuples():
        law = getattr(row, f"law_{SHOWN_SHARPNESS:g}")
        print(
            f"{row.workload:10} {row.kind:9} {int(row.batch_size):5d}  "
            f"{row.kernels:7.0f} {row.profile_launches:6.0f}  "
            f"{row.device_ms:7.2f} {row.host_ms:7.2f} {row.step_ms:7.2f} {law:7.2f}  "
            f"{row.modelled_step_ms:7.2f} {100 * (row.modelled_step_ms / row.step_ms - 1):+6.0f}%"
        )
    ratio = rows["profile_launches"] / rows["kernels"]
    print(
        f"traced launches / profiled kernels: median {ratio.median():.2f} "
        f"(range {ratio.min():.2f} … {ratio.max():.2f})"
    )
    host_bound = rows["host_ms"] > rows["device_ms"]
    per_kernel = rows.loc[host_bound & dispatch_only, "host_us_per_kernel"]
    print(
        f"host time per kernel where the host bounds the step ({len(per_kernel)} points): "
        f"median {per_kernel.median():.1f} µs (range {per_kernel.min():.1f} … {per_kernel.max():.1f})"
    )
    errors = np.abs(rows["modelled_step_ms"] / rows["step_ms"] - 1) * 100
    for label, mask in (("host-bound", host_bound), ("device-bound", ~host_bound)):
        if mask.any():
            print(
                f"modelled step, {label} points ({int(mask.sum())}): median error "
                f"{statistics.median(errors[mask]):.1f}%, mean {statistics.fmean(errors[mask]):.1f}%"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
