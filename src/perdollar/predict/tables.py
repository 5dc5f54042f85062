"""Accelerators and operators as numpy arrays, so the roofline runs over all of them at once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import get_args

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.profile.model import OperatorClass, OperatorRecord, Profile

SPLIT_K_MIN_DEPTH = 512  # a split-K slice shorter than this costs more in reduction than it saves
COMPUTE_DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8")
GEMM_CLASSES = ("matmul", "conv", "attention", "recurrent")
_DTYPE_ALIASES = {
    "float32": "fp32",
    "float16": "fp16",
    "half": "fp16",
    "bfloat16": "bf16",
    "f16": "fp16",
    "int8": "fp8",
    "fp4": "fp8",
}
# AMD CDNA 1 and 2 run exact fp32 GEMMs on their matrix cores at twice the vector rate (AMD
# Instinct MI100 data sheet: 46.1 TFLOPS FP32 matrix against 23.1 vector; MI200 series data
# sheet, MI250: 90.5 against 45.3). rocBLAS uses those instructions for sgemm, so PyTorch's fp32
# matmul passes the vector peak (33 TFLOPS on an MI210 of 22.6, torch-performance-test-data
# issue 195). CDNA 3's fp32 matrix rate equals its vector rate; it has TF32 instead.
_FP32_MATRIX_SPEEDUP = {"CDNA 1": 2.0, "CDNA 2": 2.0}


# Chips whose fp32 peak counts lanes their schedulers cannot fill every cycle from fp32 work alone:
# - Kepler GK110/GK210 (3.5, 3.7): 192 fp32 lanes per SM fed by four schedulers, which fill 128
#   of them unless they dual-issue (NVIDIA Kepler GK110 whitepaper): 2/3.
# - GA10x (8.6): a second datapath runs fp32 *or* int32 (NVIDIA Ampere GA102 whitepaper); a
#   GEMM's address and loop arithmetic occupies it, so PyTorch's fp32 matmul reaches about 0.73 of
#   the rate of dedicated fp32 units (published rates in benchmarks/published_gemm_rates.csv: six
#   GA10x boards 0.71-0.86, median 0.76; with three AD10x boards, median 0.73). AD10x (8.9)
#   shares the design, but its boards' fp32 rates are already lowered by the power law (a 4090
#   at 67% of its fp32 peak, as published); applying both would count the loss twice.
_FP32_ISSUE_LIMIT = {"3.5": 2 / 3, "3.7": 2 / 3, "8.6": 0.73}


def fp32_matrix_speedup(architecture: str) -> float | None:
    """How much faster than the vector peak the chip runs exact fp32 GEMMs, if it has such units."""
    for prefix, speedup in _FP32_MATRIX_SPEEDUP.items():
        if architecture.startswith(prefix):
            return speedup
    return None


def normalise_dtype(dtype: str) -> str:
    name = _DTYPE_ALIASES.get(dtype.lower(), dtype.lower())
    return name if name in COMPUTE_DTYPES else "fp32"


@dataclass(frozen=True)
class DeviceTable:
    """Peak rates (FLOP/s), bandwidth (B/s) and SM counts of several accelerators, one row each.

    A missing peak falls back to the next slower path the chip really has: fp8 → fp16,
    bf16/fp16/tf32 → fp32 (how frameworks run a dtype the hardware lacks).
    """

    keys: tuple[str, ...]
    peak: np.ndarray  # [devices, len(COMPUTE_DTYPES)]
    bandwidth: np.ndarray  # [devices]
    sm_count: np.ndarray  # [devices]
    has_tensor_cores: np.ndarray  # [devices, dtypes] — the dtype runs on matrix units
    # Board power per SM-GHz: low values mark chips that cannot hold boost clock under load (T4, L4).
    watts_per_sm_ghz: np.ndarray | None = None
    # Exact (not TF32) fp32 GEMMs run on matrix units, at the rate in the tf32 column (AMD CDNA 1/2).
    exact_fp32_on_matrix: np.ndarray | None = None
    # Share of the fp32 peak a GEMM off the matrix units can issue (see _FP32_ISSUE_LIMIT).
    simt_gemm_share: np.ndarray | None = None
    # The chip runs AMD's ROCm stack, whose efficiencies are not those fitted on CUDA GPUs.
    runs_rocm: np.ndarray | None = None

    @classmethod
    def from_accelerators(cls, accelerators: Sequence[Accelerator]) -> DeviceTable:
        rows, tensor, bandwidth, sms, power, exact_matrix, issue = [], [], [], [], [], [], []
        rocm = [acc.software_stack == "rocm" for acc in accelerators]
        for acc in accelerators:
            fp32 = acc.peak_fp32_tflops or acc.peak_bf16_tflops or acc.peak_fp16_tflops or 1.0
            fp16 = acc.peak_fp16_tflops or acc.peak_bf16_tflops or fp32
            bf16 = acc.peak_bf16_tflops or fp32
            tf32 = acc.peak_tf32_tflops or fp32
            fp8 = acc.peak_fp8_tflops or fp16
            speedup = fp32_matrix_speedup(acc.architecture) if acc.peak_tf32_tflops is None else None
            if speedup:
                tf32 = fp32 * speedup
            exact_matrix.append(speedup is not None)
            row = [fp32, tf32, fp16, bf16, fp8]
            tensor.append(
                [
                    v > 1.5 * fp32 or (i == 1 and (acc.peak_tf32_tflops is not None or speedup is not None))
                    for i, v in enumerate(row)
                ]
            )
            rows.append([v * 1e12 for v in row])
            issue.append(_FP32_ISSUE_LIMIT.get(acc.compute_capability or "", 1.0))
            known = acc.memory_bandwidth_gbps and math.isfinite(acc.memory_bandwidth_gbps)
            bandwidth.append((acc.memory_bandwidth_gbps if known else 100.0) * 1e9)
            sms.append(float(acc.sm_count) if acc.sm_count else math.nan)
            if acc.tdp_w and acc.sm_count and acc.boost_clock_mhz:
                power.append(acc.tdp_w / (acc.sm_count * acc.boost_clock_mhz / 1000.0))
            else:
                power.append(math.nan)
        return cls(
            keys=tuple(a.key for a in accelerators),
            peak=np.array(rows, dtype=float).reshape(-1, len(COMPUTE_DTYPES)),
            bandwidth=np.array(bandwidth, dtype=float),
            sm_count=np.array(sms, dtype=float),
            has_tensor_cores=np.array(tensor, dtype=bool).reshape(-1, len(COMPUTE_DTYPES)),
            watts_per_sm_ghz=np.array(power, dtype=float),
            exact_fp32_on_matrix=np.array(exact_matrix, dtype=bool),
            simt_gemm_share=np.array(issue, dtype=float),
            runs_rocm=np.array(rocm, dtype=bool),
        )


CLASS_NAMES: tuple[str, ...] = get_args(OperatorClass)


@dataclass(frozen=True)
class OperatorTable:
    """The operators of one step: totals per record and what one kernel launch does."""

    flops: np.ndarray  # per launch
    bytes: np.ndarray  # per launch
    launches: np.ndarray
    dtype_index: np.ndarray
    is_gemm: np.ndarray
    class_index: np.ndarray
    is_backward: np.ndarray
    tiles: np.ndarray  # GEMM output tiles per launch (NaN when the shape is unknown)
    # fp32 operators that never run as TF32 (PyTorch's default for matmul; cuDNN convs may).
    strict_fp32: np.ndarray | None = None
    # How many ways a GEMM's reduction dimension can be split (cuBLAS split-K): a weight
    # gradient with a 256×256 output and K = batch×seq fills every SM, not one.
    k_splits: np.ndarray | None = None

    @classmethod
    def from_operators(cls, operators: Sequence[OperatorRecord], tile: int = 128) -> OperatorTable:
        n = len(operators)
        flops, nbytes, launches = np.zeros(n), np.zeros(n), np.ones(n)
        dtype_index, class_index = np.zeros(n, dtype=int), np.zeros(n, dtype=int)
        is_gemm, is_backward = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        tiles = np.full(n, np.nan)
        strict = np.zeros(n, dtype=bool)
        k_splits = np.ones(n)
        for i, op in enumerate(operators):
            count = max(int(op.count), 1)
            launches[i] = count
            flops[i] = op.flops / count
            nbytes[i] = op.bytes_moved / count
            dtype_index[i] = COMPUTE_DTYPES.index(normalise_dtype(op.dtype))
            cls_name = op.op_class if op.op_class in CLASS_NAMES else "unclassified"
            class_index[i] = CLASS_NAMES.index(cls_name)
            is_gemm[i] = cls_name in GEMM_CLASSES
            is_backward[i] = op.phase == "backward"
            strict[i] = op.dtype == "fp32" and cls_name != "conv"
            if op.gemm_mnk is not None and is_gemm[i]:
                m, nn, k = op.gemm_mnk
                tiles[i] = math.ceil(max(m, 1) / tile) * math.ceil(max(nn, 1) / tile)
                k_splits[i] = max(k // SPLIT_K_MIN_DEPTH, 1)
        return cls(
            flops, nbytes, launches, dtype_index, is_gemm, class_index, is_backward, tiles, strict, k_splits
        )

    @classmethod
    def from_profile(cls, profile: Profile, tile: int = 128) -> OperatorTable:
        return cls.from_operators(profile.operators, tile)


def take_devices(devices: DeviceTable, rows: np.ndarray) -> DeviceTable:
    """The device table with its rows picked (and repeated) by index: every per-device field."""
    picked: dict[str, object] = {"keys": tuple(devices.keys[i] for i in rows)}
    for column in fields(DeviceTable):
        value = getattr(devices, column.name)
        if column.name != "keys":
            picked[column.name] = None if value is None else value[rows]
    return DeviceTable(**picked)  # type: ignore[arg-type]
