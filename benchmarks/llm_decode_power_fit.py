"""Fit and check the serving busy share against the H200 steps measured with the board's power.

    PYTHONPATH=src python3 benchmarks/llm_decode_power_fit.py             # the H200 rows (fitted)
    PYTHONPATH=src python3 benchmarks/llm_decode_power_fit.py --steps benchmarks/gpu_graph_steps_h100.csv \
        --accelerator H100-SXM5-80GB                                      # held out: another board

Each row of ``benchmarks/gpu_graph_steps_h200.csv`` (a decode step of ``batch`` sequences over
``context`` tokens in a CUDA graph, or a prefill) has its compute share: the step's forward FLOPs
over its measured time and the H200's dense bf16 peak. The busy share the serving bill uses,
``min(1, floor × min(1, running) + slope × compute share)``, gives the board's power through the
bill's accelerator model (TDP × (idle + (1 − idle) × busy share)). The script fits the two numbers
to the dense models' rows by least squares on the power, prints the fit, then each row's
prediction with the shipped numbers and the error; the mixture-of-experts rows are printed apart,
not fitted (a plain PyTorch MoE leaves the board idle between its many short kernels).
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

import numpy as np

from gpu_graph_steps_check import QWEN_25_32B  # the config the measured rows were built from
from perdollar.catalog import bill_data, load
from perdollar.price.llm_serving_energy import (
    DECODE_BUSY_FLOOR,
    DECODE_BUSY_PER_COMPUTE,
    forward_flops_per_token,
)
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import from_hf_config

HERE = Path(__file__).resolve().parent


def architecture(name: str):  # type: ignore[no-untyped-def]
    if name == "qwen2.5-32b":
        return from_hf_config(QWEN_25_32B, name=name)
    return load_llm_workload(name, kind="inference").architecture


def compute_share(row: dict[str, str], peak_flops: float) -> float:
    arch = architecture(row["model"])
    batch, context = float(row["batch"]), float(row["context_tokens"])
    if row["phase"] == "prefill":
        flops = batch * context * forward_flops_per_token(arch, context / 2.0)
    else:
        flops = batch * forward_flops_per_token(arch, context)
    return flops / (float(row["median_ms"]) / 1000.0 * peak_flops)


def board_watts(share: np.ndarray, running: np.ndarray, floor: float, slope: float, tdp: float,
                idle: float) -> np.ndarray:  # fmt: skip
    busy = np.clip(floor * np.clip(running, 0.0, 1.0) + slope * share, 0.0, 1.0)
    return tdp * (idle + (1.0 - idle) * busy)


def fit(
    share: np.ndarray, running: np.ndarray, watts: np.ndarray, tdp: float, idle: float
) -> tuple[float, float]:
    """Least squares on the power over a grid of (floor, slope)."""
    best = (np.inf, 0.0, 0.0)
    for floor in np.arange(0.30, 0.90, 0.01):
        for slope in np.arange(0.2, 8.0, 0.1):
            error = float(np.sum((board_watts(share, running, floor, slope, tdp, idle) - watts) ** 2))
            best = min(best, (error, float(floor), float(slope)))
    return best[1], best[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=Path, default=HERE / "gpu_graph_steps_h200.csv")
    parser.add_argument("--accelerator", default="H200-SXM-141GB", help="the catalog key of the board")
    args = parser.parse_args()
    chip = load().accelerators[args.accelerator]
    tdp, peak = float(chip.tdp_w or 700.0), float(chip.peak_bf16_tflops or 0.0) * 1e12
    idle = bill_data.energy_factors().accelerator_idle_fraction
    rows = [r for r in csv.DictReader(args.steps.open()) if r["mean_power_w"]]
    shares = np.array([compute_share(r, peak) for r in rows])
    running = np.array([float(r["batch"]) for r in rows])
    watts = np.array([float(r["mean_power_w"]) for r in rows])
    dense = np.array([r["model"] != "qwen3-30b-a3b" for r in rows])
    floor, slope = fit(shares[dense], running[dense], watts[dense], tdp, idle)
    print(f"{args.accelerator} ({args.steps.name}): TDP {tdp:g} W, bf16 peak {peak / 1e12:g} TFLOP/s, "
          f"idle share {idle:g}")  # fmt: skip
    print(f"a fit to these {int(dense.sum())} dense rows would be: floor {floor:.2f}, slope {slope:.1f}")
    print(f"shipped (the H200 fit), used below: floor {DECODE_BUSY_FLOOR:g}, "
          f"slope {DECODE_BUSY_PER_COMPUTE:g}")  # fmt: skip
    shipped = board_watts(shares, running, DECODE_BUSY_FLOOR, DECODE_BUSY_PER_COMPUTE, tdp, idle)
    flat = board_watts(shares, running, 1.0, 0.0, tdp, idle)  # the training bill's busy share of 1
    print(f"{'model':15} {'phase':8} {'batch':>5} {'ctx':>6} {'c':>7} {'measured W':>10} {'model W':>8} "
          f"{'error':>7}")  # fmt: skip
    for index, row in enumerate(rows):
        error = shipped[index] / watts[index] - 1.0
        print(f"{row['model']:15} {row['phase']:8} {row['batch']:>5} {row['context_tokens']:>6} "
              f"{shares[index]:7.4f} {watts[index]:10.1f} {shipped[index]:8.1f} {error:+7.1%}")  # fmt: skip
    decode = np.array([r["phase"] == "decode" for r in rows])
    subsets = (
        ("dense", dense),
        ("dense decode", dense & decode),
        ("mixture of experts (not fitted)", ~dense),
    )
    for label, subset in subsets:
        errors = np.abs(shipped[subset] / watts[subset] - 1.0)
        flat_errors = np.abs(flat[subset] / watts[subset] - 1.0)
        print(f"{label}: {int(subset.sum())} rows, median |error| {statistics.median(errors):.1%}, "
              f"max {errors.max():.1%} (busy share 1: median {statistics.median(flat_errors):.1%}, "
              f"max {flat_errors.max():.1%})")  # fmt: skip
    # Held out: fitted on one dense model, checked on the other.
    for fitted_on, held_out in (("llama-3.1-8b", "qwen2.5-32b"), ("qwen2.5-32b", "llama-3.1-8b")):
        train = np.array([r["model"] == fitted_on for r in rows])
        test = np.array([r["model"] == held_out for r in rows])
        a, b = fit(shares[train], running[train], watts[train], tdp, idle)
        errors = np.abs(board_watts(shares[test], running[test], a, b, tdp, idle) / watts[test] - 1.0)
        print(f"fitted on {fitted_on} (floor {a:.2f}, slope {b:.1f}), held-out {held_out}: "
              f"median |error| {statistics.median(errors):.1%}, max {errors.max():.1%}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
