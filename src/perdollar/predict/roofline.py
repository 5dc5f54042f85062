"""The per-operator roofline: time of every operator on every accelerator in one array.

For operator *i* on accelerator *a*, per kernel launch::

    t = max(F / (P_a,dtype · e_class · quantisation), B / (BW_a · e_mem)) + overhead

summed over launches and operators; the step adds a fixed framework time (``step_overhead_s``,
the same on every GPU, so small-batch ratios between GPUs shrink toward 1). Compute rates of
power-capped boards are lowered by their board power per SM-GHz, with separate exponents for
tensor-core and SIMT work. Efficiencies are global (fitted across GPUs, see ``predict/fit.py``);
they vary with the operator's class and shape (GEMM wave quantisation against the SM count) and
with the chip's size (peak and bandwidth), never per GPU name. Chips on AMD's ROCm stack reach a
fixed share of them (``rocm_efficiency``), read from published comparisons, not fitted.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perdollar.predict.params import ModelParams
from perdollar.predict.tables import CLASS_NAMES, COMPUTE_DTYPES, DeviceTable, OperatorTable

_FP32, _TF32 = COMPUTE_DTYPES.index("fp32"), COMPUTE_DTYPES.index("tf32")
_REFERENCE_PEAK = 100e12  # FLOP/s where the large-chip penalty is 1
_REFERENCE_BANDWIDTH = 900e9  # B/s where the bandwidth penalty is 1


@dataclass(frozen=True)
class OperatorTimes:
    """Seconds per step for each (device, operator), split by what bounds it."""

    compute: np.ndarray  # [devices, ops] compute-bound time (all launches)
    memory: np.ndarray  # [devices, ops] memory-bound time (all launches)
    overhead: np.ndarray  # [ops] launch overhead (same on every device)

    @property
    def bound(self) -> np.ndarray:
        return np.maximum(self.compute, self.memory)

    @property
    def total(self) -> np.ndarray:
        return self.bound + self.overhead[None, :]

    def step_seconds(self) -> np.ndarray:
        return self.total.sum(axis=1)


def _gemm_rate(
    devices: DeviceTable, ops: OperatorTable, params: ModelParams, paired: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Achievable FLOP/s of GEMM-like operators and whether they run on tensor cores.

    Both [devices, ops] (or [ops] when paired).
    """
    dtype = ops.dtype_index
    rows = np.arange(len(dtype)) if paired else slice(None)
    cols = dtype if paired else (slice(None), dtype)
    peak = devices.peak[rows, dtype] if paired else devices.peak[cols]
    tensor = devices.has_tensor_cores[rows, dtype] if paired else devices.has_tensor_cores[cols]
    fp32_peak = devices.peak[:, _FP32] if paired else devices.peak[:, [_FP32]]
    tf32_peak = devices.peak[:, _TF32] if paired else devices.peak[:, [_TF32]]
    tf32_tensor = devices.has_tensor_cores[:, _TF32] if paired else devices.has_tensor_cores[:, [_TF32]]
    # fp32 GEMMs run partly as TF32 on chips that have it (a policy with a fitted share); on
    # chips with exact-fp32 matrix units (the tf32 column holds their rate) all of them do.
    fp32_ops = dtype == _FP32
    share: float | np.ndarray = params.tf32_share_of_fp32
    if ops.strict_fp32 is not None:
        share = np.where(ops.strict_fp32, 0.0, share)
    if devices.exact_fp32_on_matrix is not None:  # every fp32 GEMM runs on the matrix units
        exact = devices.exact_fp32_on_matrix if paired else devices.exact_fp32_on_matrix[:, None]
        share = np.where(exact, 1.0, share)
    mixed = 1.0 / (share / tf32_peak + (1.0 - share) / fp32_peak)
    peak = np.where(fp32_ops, mixed, peak)
    tensor = np.where(fp32_ops, tf32_tensor & (share > 0.5), tensor)
    efficiency = np.where(tensor, params.tensor_core_efficiency, params.simt_efficiency)
    size_penalty = np.where(
        tensor, (np.maximum(peak, _REFERENCE_PEAK) / _REFERENCE_PEAK) ** (-params.large_chip_exponent), 1.0
    )
    class_factor = np.ones(len(dtype))
    class_factor[ops.class_index == CLASS_NAMES.index("conv")] = params.conv_relative_efficiency
    class_factor[ops.class_index == CLASS_NAMES.index("attention")] = params.attention_relative_efficiency
    # GEMMs off the matrix units, on chips whose schedulers cannot fill every fp32 lane.
    if devices.simt_gemm_share is not None:
        share_of_peak = devices.simt_gemm_share if paired else devices.simt_gemm_share[:, None]
        efficiency = np.where(tensor, efficiency, efficiency * share_of_peak)
    return peak * np.minimum(efficiency * size_penalty * class_factor, 1.0), tensor


def _wave_quantisation(devices: DeviceTable, ops: OperatorTable, paired: bool) -> np.ndarray:
    """≥ 1: a GEMM whose tiles fill 1.2 waves of SMs takes as long as 2 full waves.

    A GEMM with fewer output tiles than SMs but a deep reduction (a weight gradient reduced over
    batch × sequence) splits that reduction over the idle SMs, as cuBLAS does.
    """
    sms = np.where(np.isnan(devices.sm_count), 80.0, devices.sm_count)
    sms = sms if paired else sms[:, None]
    tiles = ops.tiles
    if ops.k_splits is not None:  # too few output tiles: the reduction is split across idle SMs
        idle_share = np.maximum(np.floor(sms / np.where(tiles > 0, tiles, 1.0)), 1.0)
        tiles = tiles * np.where(tiles < sms, np.minimum(ops.k_splits, idle_share), 1.0)
    waves = tiles / sms
    quantised = np.ceil(waves) / np.where(waves > 0, waves, 1.0)
    return np.where(np.isnan(waves), 1.0, quantised)


def _power_factor(devices: DeviceTable, params: ModelParams, exponent: float) -> np.ndarray:
    """≤ 1: chips with little board power per SM-GHz run below their boost clock under load."""
    if devices.watts_per_sm_ghz is None:
        return np.ones(len(devices.bandwidth))
    # Extrapolated below the fitted boards too: the 72 W L4 (0.61 W per SM-GHz, under every board
    # of the development set) held at the lowest fitted density came out 42% fast on published
    # fp16 GEMM rates, and 10% fast with the law carried on (benchmarks/RESULTS.md).
    ratio = np.nan_to_num(devices.watts_per_sm_ghz / params.power_reference_w_per_sm_ghz, nan=1.0)
    return np.minimum(ratio, 1.0) ** exponent


def _stack_share(devices: DeviceTable, params: ModelParams) -> np.ndarray:
    """The share of the CUDA-fitted efficiencies the chip's software stack reaches (ROCm < 1)."""
    if devices.runs_rocm is None:
        return np.ones(len(devices.bandwidth))
    return np.where(devices.runs_rocm, params.rocm_efficiency, 1.0)


def operator_times(
    devices: DeviceTable, ops: OperatorTable, params: ModelParams, *, paired: bool = False
) -> OperatorTimes:
    """Times of every operator on every device ([devices, ops]).

    ``paired=True``: ``devices`` has one row per operator (operator *i* runs on device row *i*)
    and the result is [1, ops] — how the fit evaluates thousands of (workload, GPU) cases at once.
    """
    fp32_peak = devices.peak[:, _FP32] if paired else devices.peak[:, [_FP32]]
    vector_rate = fp32_peak * params.vector_efficiency
    gemm_rate, tensor = _gemm_rate(devices, ops, params, paired)
    rate = np.where(ops.is_gemm, gemm_rate, vector_rate)
    share = _stack_share(devices, params)
    # Full-rate SIMT FMA draws more power per clock than tensor-core work that waits on operands,
    # so a power-capped board loses more clock on it: two exponents of the same power ratio.
    power_tensor = _power_factor(devices, params, params.power_exponent) * share
    power_simt = _power_factor(devices, params, params.power_exponent_simt) * share
    if not paired:
        power_tensor, power_simt = power_tensor[:, None], power_simt[:, None]
    rate = rate * np.where(ops.is_gemm & tensor, power_tensor, power_simt)
    quantisation = np.where(ops.is_gemm, _wave_quantisation(devices, ops, paired), 1.0)
    compute = ops.flops / rate * quantisation * ops.launches
    bandwidth_penalty = (np.maximum(devices.bandwidth, _REFERENCE_BANDWIDTH) / _REFERENCE_BANDWIDTH) ** (
        -params.bandwidth_exponent
    )
    achievable_bw = devices.bandwidth * params.memory_efficiency * bandwidth_penalty * share
    memory = ops.bytes / (achievable_bw if paired else achievable_bw[:, None]) * ops.launches
    overhead = ops.launches * params.kernel_overhead_s
    if paired:
        compute, memory = compute[None, :], memory[None, :]
    return OperatorTimes(compute, memory, overhead)
