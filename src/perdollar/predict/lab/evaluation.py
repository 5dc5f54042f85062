"""Step times of many published rows at once, and the error metrics of predictions.

Each usable row becomes a *case*: a workload (a traced reference profile, or the fallback
profile of its model name) at a per-GPU batch and precision on one accelerator. The fallback
cases are evaluated all together (two operators each, paired with their device); reference
profiles once per profile against every device.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.catalog.model import Accelerator
from perdollar.predict.lab.fallback import (
    COMPUTE_DTYPE,
    DEFAULT_DESCRIPTOR,
    ELEMENT_FACTOR,
    FALLBACK_FLOPS_PER_SAMPLE,
    descriptor_for,
    family_key,
)
from perdollar.predict.params import ModelParams
from perdollar.predict.roofline import operator_times
from perdollar.predict.tables import (
    CLASS_NAMES,
    COMPUTE_DTYPES,
    DeviceTable,
    OperatorTable,
    take_devices,
)
from perdollar.profile.model import Profile

ProfileProvider = Callable[[pd.Series], Profile | None]


@dataclass
class Cases:
    """The usable rows with a known accelerator, ready for vectorised step times."""

    rows: pd.DataFrame  # indexed 0..n-1, with columns device_row, family, reference
    devices: DeviceTable
    families: list[str]
    profiles: dict[str, Profile]  # by profile id (reference rows only)

    @property
    def is_reference(self) -> np.ndarray:
        return self.rows["profile_id"].notna().to_numpy()


def batch_sizes(rows: pd.DataFrame) -> np.ndarray:
    """Per-GPU batch of each row; a row that states none counts as batch 1."""
    return np.maximum(np.nan_to_num(rows["per_gpu_batch"].to_numpy(dtype=float), nan=1.0), 1.0)


def build_cases(
    rows: pd.DataFrame, accelerators: Mapping[str, Accelerator], profile_for: ProfileProvider | None = None
) -> Cases:
    usable = rows[rows["usable"] & rows["accelerator_key"].isin(list(accelerators))].copy()
    keys = sorted(set(usable["accelerator_key"]))
    devices = DeviceTable.from_accelerators([accelerators[k] for k in keys])
    usable["device_row"] = usable["accelerator_key"].map({k: i for i, k in enumerate(keys)})
    usable["family"] = [
        family_key(m, t, u)
        for m, t, u in zip(usable["model"], usable["task"], usable["unit_kind"], strict=True)
    ]
    profiles: dict[str, Profile] = {}
    profile_ids: list[str | None] = []
    for _, row in usable.iterrows():
        profile = profile_for(row) if profile_for else None
        if profile is None:
            profile_ids.append(None)
            continue
        pid = f"{profile.workload_fingerprint}:{profile.batch_size}:{profile.precision}"
        profiles[pid] = profile
        profile_ids.append(pid)
    usable["profile_id"] = profile_ids
    usable = usable.reset_index(drop=True)
    families = sorted(set(usable.loc[usable["profile_id"].isna(), "family"]))
    return Cases(usable, devices, families, profiles)


def fallback_step_times(
    cases: Cases, params: ModelParams, descriptors: Mapping[str, Mapping[str, float]]
) -> np.ndarray:
    """Seconds per step of every fallback case (NaN for reference cases), vectorised."""
    return fallback_step_times_from(cases, params, *descriptor_arrays(cases, descriptors))


def descriptor_arrays(
    cases: Cases, descriptors: Mapping[str, Mapping[str, float]]
) -> tuple[np.ndarray, np.ndarray]:
    """Per case: log bytes per FLOP and log launches of its model's fallback descriptor (fitted, or
    borrowed as ``descriptor_for`` says)."""
    fams = cases.rows["family"].to_numpy()
    resolved = {f: descriptor_for(f, descriptors) for f in set(fams)}
    log_bpf = np.array([resolved[f]["log_bytes_per_flop"] for f in fams])
    log_launch = np.array([resolved[f]["log_launches"] for f in fams])
    return log_bpf, log_launch


@dataclass(frozen=True)
class _FallbackArrays:
    """What does not change between evaluations of the fallback cases (the fit calls this often)."""

    mask: np.ndarray
    flops: np.ndarray
    element: np.ndarray
    dtype: np.ndarray
    strict_fp32: np.ndarray
    devices: DeviceTable  # two rows per fallback case (its GEMM and its memory operator)


def _fallback_arrays(cases: Cases) -> _FallbackArrays:
    cached = getattr(cases, "_fallback_cache", None)
    if cached is not None:
        return cached
    rows = cases.rows
    mask = rows["profile_id"].isna().to_numpy()
    sub = rows[mask]
    passes = np.where(sub["task"].to_numpy() == "train", 3.0, 1.0)
    batch = batch_sizes(sub)
    precision = sub["precision"].astype(str).to_numpy()
    strict = sub["tf32_disabled"].to_numpy(dtype=bool) if "tf32_disabled" in sub else np.zeros(len(sub), bool)
    device_rows = sub["device_row"].to_numpy()
    arrays = _FallbackArrays(
        mask=mask,
        flops=FALLBACK_FLOPS_PER_SAMPLE * passes * batch,
        element=np.array([ELEMENT_FACTOR.get(p, 1.0) for p in precision]),
        dtype=np.array([COMPUTE_DTYPES.index(COMPUTE_DTYPE.get(p, "fp32")) for p in precision], dtype=int),
        strict_fp32=strict,
        devices=take_devices(cases.devices, np.concatenate([device_rows, device_rows])),
    )
    cases._fallback_cache = arrays  # type: ignore[attr-defined]
    return arrays


def fallback_step_times_from(
    cases: Cases, params: ModelParams, log_bytes_per_flop: np.ndarray, log_launches: np.ndarray
) -> np.ndarray:
    """As :func:`fallback_step_times`, with the descriptors given per case (the fit's fast path)."""
    fa = _fallback_arrays(cases)
    result = np.full(len(fa.mask), np.nan)
    n = int(fa.mask.sum())
    if not n:
        return result
    launches = np.maximum(np.exp(log_launches[fa.mask]), 1.0)
    moved = fa.flops * np.exp(log_bytes_per_flop[fa.mask]) * fa.element
    ops = OperatorTable(
        flops=np.concatenate([fa.flops, np.zeros(n)]),
        bytes=np.concatenate([np.zeros(n), moved / launches]),
        launches=np.concatenate([np.ones(n), launches]),
        dtype_index=np.concatenate([fa.dtype, fa.dtype]),
        is_gemm=np.concatenate([np.ones(n, dtype=bool), np.zeros(n, dtype=bool)]),
        class_index=np.concatenate(
            [np.full(n, CLASS_NAMES.index("matmul")), np.full(n, CLASS_NAMES.index("elementwise"))]
        ),
        is_backward=np.zeros(2 * n, dtype=bool),
        tiles=np.full(2 * n, np.nan),
        strict_fp32=np.concatenate([fa.strict_fp32, fa.strict_fp32]),
    )
    stream_params = dataclasses.replace(params, bandwidth_exponent=params.fallback_bandwidth_exponent)
    total = operator_times(fa.devices, ops, stream_params, paired=True).total[0]
    # The framework time of a step is spread over the fallback's launches (as over the ~300
    # kernels of a typical step): its FLOPs are a stand-in, so a fixed per-step time would swamp
    # them; the fitted launch count scales all fixed costs of the model together.
    framework = launches * params.step_overhead_s / math.exp(DEFAULT_DESCRIPTOR["log_launches"])
    result[fa.mask] = total[:n] + total[n:] + framework
    return result


def _concat_tables(tables: list[OperatorTable]) -> OperatorTable:
    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(t, name) for t in tables])

    strict = np.concatenate(
        [t.strict_fp32 if t.strict_fp32 is not None else np.zeros(len(t.flops), bool) for t in tables]
    )
    splits = np.concatenate([t.k_splits if t.k_splits is not None else np.ones(len(t.flops)) for t in tables])
    return OperatorTable(
        cat("flops"),
        cat("bytes"),
        cat("launches"),
        cat("dtype_index"),
        cat("is_gemm"),
        cat("class_index"),
        cat("is_backward"),
        cat("tiles"),
        strict,
        splits,
    )


def reference_step_times(cases: Cases, params: ModelParams) -> np.ndarray:
    """Seconds per step of every reference case: all (case, operator) pairs in one paired array."""
    rows = cases.rows
    result = np.full(len(rows), np.nan)
    cached = getattr(cases, "_reference_cache", None)
    if cached is None:
        tables = {pid: OperatorTable.from_profile(p, params.gemm_tile) for pid, p in cases.profiles.items()}
        picked, case_of_op, device_rows = [], [], []
        disabled = (
            rows["tf32_disabled"] if "tf32_disabled" in rows else pd.Series(False, index=rows.index)
        ).to_numpy(dtype=bool)
        for i, (pid, device_row) in enumerate(zip(rows["profile_id"], rows["device_row"], strict=True)):
            if pid is None or (isinstance(pid, float) and math.isnan(pid)):
                continue
            table = tables[pid]
            # Published fp32 runs used the framework's TF32 default (the fitted share) unless the
            # source says TF32 was off; a user's own profile keeps PyTorch's per-operator default.
            fp32 = table.dtype_index == COMPUTE_DTYPES.index("fp32")
            picked.append(dataclasses.replace(table, strict_fp32=fp32 & bool(disabled[i])))
            case_of_op.append(np.full(len(table.flops), i))
            device_rows.append(np.full(len(table.flops), device_row))
        if not picked:
            return result
        ops = _concat_tables(picked)
        cached = (ops, np.concatenate(case_of_op), take_devices(cases.devices, np.concatenate(device_rows)))
        cases._reference_cache = cached  # type: ignore[attr-defined]
    ops, case_index, devices = cached
    total = operator_times(devices, ops, params, paired=True).total[0]
    sums = np.bincount(case_index, weights=total, minlength=len(rows))
    mask = np.bincount(case_index, minlength=len(rows)) > 0
    result[mask] = sums[mask] + params.step_overhead_s
    return result


def step_times(
    cases: Cases, params: ModelParams, descriptors: Mapping[str, Mapping[str, float]]
) -> np.ndarray:
    fallback = fallback_step_times(cases, params, descriptors)
    if cases.profiles:
        reference = reference_step_times(cases, params)
        return np.where(np.isnan(fallback), reference, fallback)
    return fallback


def spec_throughput(cases: Cases, times: np.ndarray) -> np.ndarray:
    """Samples/s per GPU from specs alone (only meaningful for reference cases)."""
    batch = batch_sizes(cases.rows)
    return batch / times


def pair_indices(cases: Cases, target_gpus: set[str] | None = None) -> pd.DataFrame:
    """Anchor/target case indices of every pair (same pairing key, different GPU name)."""
    frame = cases.rows[["pair_key", "gpu"]].reset_index(names="case")
    merged = frame.merge(frame, on="pair_key", suffixes=("_anchor", "_target"))
    merged = merged[merged["gpu_anchor"] != merged["gpu_target"]]
    if target_gpus is not None:
        merged = merged[merged["gpu_target"].isin(target_gpus)]
    return merged.reset_index(drop=True)


def ape_summary(predicted: Sequence[float] | np.ndarray, actual: Sequence[float] | np.ndarray) -> dict:
    p, a = np.asarray(predicted, dtype=float), np.asarray(actual, dtype=float)
    ok = np.isfinite(p) & np.isfinite(a) & (a > 0)
    ape = np.abs(p[ok] / a[ok] - 1.0)
    if not len(ape):
        return {"n": 0, "median_ape": None, "mean_ape": None, "within_10pct": None, "within_25pct": None}
    return {
        "n": len(ape),
        "median_ape": float(np.median(ape)),
        "mean_ape": float(np.mean(ape)),
        "within_10pct": float(np.mean(ape <= 0.10)),
        "within_25pct": float(np.mean(ape <= 0.25)),
    }


def summary_line(label: str, summary: dict) -> str:
    """One printed line of an :func:`ape_summary`: pairs, median and mean error, shares within 10/25%."""
    if not summary["n"]:
        return f"  {label:<38} n=0"
    return (
        f"  {label:<38} n={summary['n']:<5} median {100 * summary['median_ape']:5.1f}%"
        f"  mean {100 * summary['mean_ape']:5.1f}%"
        f"  ≤10% {100 * summary['within_10pct']:4.0f}%  ≤25% {100 * summary['within_25pct']:4.0f}%"
    )


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2:
        return math.nan
    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if np.std(rx) == 0 or np.std(ry) == 0:
        return math.nan
    return float(np.corrcoef(rx, ry)[0, 1])
