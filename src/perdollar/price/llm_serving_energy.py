"""Energy and carbon of a language model's deployment, per million tokens served.

A replica's GPUs draw ``TDP × (idle + (1 − idle) × u)`` as :mod:`perdollar.price.energy` has it,
with the busy share ``u`` from the replica's load rather than 1: a decode step that reads its
weights at a small batch leaves the tensor cores mostly waiting, and the board draws well under
its TDP (an H200 decoding Llama-3.1-8B at batch 1 drew 390–476 W of its 700 W), while a step that
does enough arithmetic per byte (prefill, decode at a large batch) runs the board at its limit.
So the busy share is

    u = min(1, DECODE_BUSY_FLOOR × min(1, running sequences) + DECODE_BUSY_PER_COMPUTE × c)

where ``c`` is the replica's compute share: the FLOPs per second it does at the served rate over
its GPUs' dense peak in the format's compute dtype. The two numbers are fitted to the H200 steps
of ``benchmarks/gpu_graph_steps_h200.csv`` by ``benchmarks/llm_decode_power_fit.py``, which prints
the fit and its error. Fewer than one running sequence on average leaves the replica idle the
rest of the time. GPUs of the deployment that hold no replica (spot spares, GPUs left over when
a replica does not fill an instance) draw their idle floor; hosts and PUE as for training.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from perdollar.catalog.bill_data import EnergyFactors, GridIntensity
from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.formats import FORMATS, peak_tflops
from perdollar.price.energy import accelerator_watts, grid_columns, host_watts
from perdollar.workload.llm.architecture import DecoderArchitecture

# Fitted to the dense decode and prefill steps measured on an H200 (see the module's docstring).
DECODE_BUSY_FLOOR = 0.61
DECODE_BUSY_PER_COMPUTE = 6.3
MILLION = 1e6

# What the serving energy adds to a deployment row.
SERVING_ENERGY_COLUMNS = (
    "busy_share",
    "power_kw",
    "energy_kwh_per_million_tokens",
    "energy_kwh_per_million_output_tokens",
    "co2e_g_per_million_tokens",
    "co2e_g_per_million_output_tokens",
    "grid_gco2e_per_kwh",
    "grid_carbon_year",
)


def forward_flops_per_token(arch: DecoderArchitecture, context: float) -> float:
    """FLOPs of one token's forward pass: the active weights' products and attention over ``context``."""
    attention = 4.0 * arch.num_layers * arch.num_attention_heads * arch.head_dim * context
    # The busy-share fit above was made with the input embedding counted among the products.
    return 2.0 * (arch.active_params + arch.lookup_params) + attention


def busy_share(compute_share: np.ndarray, running_sequences: np.ndarray) -> np.ndarray:
    """The accelerator's busy share at a compute share and a mean number of running sequences."""
    running = np.clip(np.nan_to_num(running_sequences, nan=1.0), 0.0, 1.0)
    share = DECODE_BUSY_FLOOR * running + DECODE_BUSY_PER_COMPUTE * np.nan_to_num(compute_share)
    return np.clip(share, 0.0, 1.0)


def request_flops(arch: DecoderArchitecture, input_tokens: int, output_tokens: int) -> float:
    """FLOPs of one request: its prompt (mean context half the prompt) and its output tokens
    (mean context the prompt and half the output)."""
    prefill = input_tokens * forward_flops_per_token(arch, input_tokens / 2.0)
    decode = output_tokens * forward_flops_per_token(arch, input_tokens + output_tokens / 2.0)
    return prefill + decode


def _peak_flops(frame: pd.DataFrame, accelerators: Mapping[str, Accelerator]) -> np.ndarray:
    """Dense peak FLOP/s of one GPU of each row in its format's compute dtype (NaN: unknown)."""
    by_pair: dict[tuple[str, str], float] = {}  # thousands of rows, a few dozen (chip, format) pairs
    peaks = []
    keys = (frame[c].to_numpy(dtype=object) for c in ("accelerator_key", "precision"))
    for pair in zip(*(map(str, k) for k in keys), strict=True):
        if pair not in by_pair:
            chip, fmt = accelerators.get(pair[0]), FORMATS.get(pair[1])
            rate = peak_tflops(chip, fmt) if chip is not None and fmt is not None else None
            by_pair[pair] = rate * 1e12 if rate else np.nan
        peaks.append(by_pair[pair])
    return np.array(peaks, dtype=np.float64)


def _numbers(frame: pd.DataFrame, column: str, default: float = np.nan) -> np.ndarray:
    if column not in frame:
        return np.full(len(frame), default)
    return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)


def deployment_kw(
    frame: pd.DataFrame,
    arch: DecoderArchitecture,
    *,
    input_tokens: int,
    output_tokens: int,
    accelerators: Mapping[str, Accelerator],
    factors: EnergyFactors,
) -> tuple[np.ndarray, np.ndarray]:
    """(kW from the grid, busy share of a replica's GPUs) of every deployment row."""
    gpus_per_replica = np.maximum(_numbers(frame, "tensor_parallel", 1.0), 1.0)
    replicas = _numbers(frame, "replicas", 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        compute = (
            _numbers(frame, "rate_per_replica") * request_flops(arch, input_tokens, output_tokens)
            / (gpus_per_replica * _peak_flops(frame, accelerators))
        )  # fmt: skip
    share = busy_share(compute, _numbers(frame, "batch"))
    keys = [str(key) for key in frame["accelerator_key"].to_numpy(dtype=object)]
    tdp_by_key = {
        key: (chip.tdp_w or np.nan) if (chip := accelerators.get(key)) else np.nan for key in set(keys)
    }
    tdp = np.array([tdp_by_key[key] for key in keys], dtype=np.float64)
    instances = _numbers(frame, "instances", 0.0)
    busy_gpus = replicas * gpus_per_replica
    idle_gpus = np.maximum(instances * _numbers(frame, "accelerator_count", 1.0) - busy_gpus, 0.0)
    idle = factors.accelerator_idle_fraction
    watts = busy_gpus * accelerator_watts(tdp, share, idle) + idle_gpus * tdp * idle
    watts = watts + instances * host_watts(_numbers(frame, "vcpus", 0.0), factors)
    pue = frame["cloud"].map(lambda c: factors.pue.get(str(c), np.nan)).to_numpy(dtype=np.float64)
    return watts * pue / 1000.0, share


def serving_energy_columns(
    frame: pd.DataFrame,
    arch: DecoderArchitecture,
    *,
    input_tokens: int,
    output_tokens: int,
    accelerators: Mapping[str, Accelerator],
    factors: EnergyFactors,
    grid: Mapping[tuple[str, str], GridIntensity],
) -> pd.DataFrame:
    """kWh and gCO₂e per million tokens (in and out) and per million output tokens of every row."""
    kw, share = deployment_kw(
        frame, arch, input_tokens=input_tokens, output_tokens=output_tokens,
        accelerators=accelerators, factors=factors,
    )  # fmt: skip
    intensity = grid_columns(frame, grid)
    g_per_kwh = intensity["grid_gco2e_per_kwh"].to_numpy(dtype=np.float64)
    output_rate = _numbers(frame, "output_tokens_per_second")
    all_rate = output_rate + _numbers(frame, "input_tokens_per_second", 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_million = np.where(all_rate > 0, kw * MILLION / (all_rate * 3600.0), np.nan)
        per_million_out = np.where(output_rate > 0, kw * MILLION / (output_rate * 3600.0), np.nan)
    return pd.DataFrame(
        {
            "busy_share": share,
            "power_kw": kw,
            "energy_kwh_per_million_tokens": per_million,
            "energy_kwh_per_million_output_tokens": per_million_out,
            "co2e_g_per_million_tokens": per_million * g_per_kwh,
            "co2e_g_per_million_output_tokens": per_million_out * g_per_kwh,
            **{c: intensity[c] for c in intensity.columns},
        },
        index=frame.index,
    )
