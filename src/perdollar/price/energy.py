"""Energy and carbon of a candidate: the power it draws, times the hours, times the region's grid.

An accelerator draws ``TDP × (idle + (1 − idle) × u)``, ``u`` its busy share of the step; the host
``vCPUs × (idle W + (busy W − idle W) × host utilisation)``; the facility adds its PUE. The grid's
carbon intensity (gCO₂e/kWh, location-based) of the candidate's region turns kWh into CO₂e. The
constants and their sources are in ``catalog/energy_factors.csv`` and ``catalog/grid_carbon.csv``
(the Cloud Carbon Footprint methodology and Google's region carbon data).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from perdollar.catalog.bill_data import EnergyFactors, GridIntensity
from perdollar.frames import row_keys

# Power for an accelerator the catalog gives no TDP for: unknown rather than guessed.
UNKNOWN_POWER = np.nan


def accelerator_watts(tdp_w: np.ndarray, busy_share: np.ndarray, idle_fraction: float) -> np.ndarray:
    """Draw of one accelerator: idle floor plus the busy share of the rest of its TDP."""
    busy = np.clip(np.nan_to_num(busy_share, nan=1.0), 0.0, 1.0)
    return tdp_w * (idle_fraction + (1.0 - idle_fraction) * busy)


def host_watts(vcpus: np.ndarray, factors: EnergyFactors) -> np.ndarray:
    span = factors.host_busy_w_per_vcpu - factors.host_idle_w_per_vcpu
    return np.nan_to_num(vcpus, nan=0.0) * (factors.host_idle_w_per_vcpu + span * factors.host_utilisation)


def _no_accelerator(key: object) -> bool:
    return key is None or (isinstance(key, float) and np.isnan(key)) or key == ""


def facility_kw(
    frame: pd.DataFrame, tdp_by_key: Mapping[str, float | None], factors: EnergyFactors
) -> np.ndarray:
    """kW drawn from the grid by every row's nodes, PUE included (NaN where a TDP is unknown)."""
    keys = frame["accelerator_key"].to_numpy(dtype=object)
    # A handful of accelerators over many rows: look each up once.
    by_key = {k: 0.0 if _no_accelerator(k) else (tdp_by_key.get(k) or np.nan) for k in set(keys)}
    tdp = np.fromiter((by_key[k] for k in keys), dtype=np.float64, count=len(keys))
    per_node = frame["accelerators_per_node"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        busy = frame["compute_time_s"].to_numpy(dtype=np.float64) / frame["step_time_s"].to_numpy(
            dtype=np.float64
        )
    vcpus = frame["vcpus"].to_numpy(dtype=np.float64) if "vcpus" in frame else np.zeros(len(frame))
    node_w = per_node * accelerator_watts(tdp, busy, factors.accelerator_idle_fraction) + host_watts(
        vcpus, factors
    )
    clouds = frame["cloud"].to_numpy(dtype=object)
    pue_of = {cloud: factors.pue.get(str(cloud), np.nan) for cloud in set(clouds)}
    pue = np.fromiter((pue_of[cloud] for cloud in clouds), dtype=np.float64, count=len(clouds))
    return frame["nodes"].to_numpy(dtype=np.float64) * node_w * pue / 1000.0


def grid_columns(frame: pd.DataFrame, grid: Mapping[tuple[str, str], GridIntensity]) -> pd.DataFrame:
    """Each row's grid intensity (gCO₂e/kWh) and the year of its source; NaN and 0 where unknown."""
    found = [grid.get((cloud, region)) for cloud, region in row_keys(frame, ("cloud", "region"))]
    return pd.DataFrame(
        {
            "grid_gco2e_per_kwh": [g.gco2e_per_kwh if g else np.nan for g in found],
            "grid_carbon_year": [g.year if g else 0 for g in found],
        },
        index=frame.index,
    )


def energy_columns(
    frame: pd.DataFrame,
    tdp_by_key: Mapping[str, float | None],
    factors: EnergyFactors,
    grid: Mapping[tuple[str, str], GridIntensity],
) -> pd.DataFrame:
    """kWh and kg CO₂e of every row's run (needs the expected run hours) and per sample."""
    kw = facility_kw(frame, tdp_by_key, factors)
    intensity = grid_columns(frame, grid)
    g_per_kwh = intensity["grid_gco2e_per_kwh"].to_numpy(dtype=np.float64)
    hours = frame["expected_time_hours"].to_numpy(dtype=np.float64)
    rate = frame["effective_samples_per_second"].to_numpy(dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        kwh_per_sample = np.where(rate > 0, kw / (rate * 3600.0), np.nan)
    energy = kw * hours
    return pd.DataFrame(
        {
            "power_kw": kw,
            "energy_kwh": energy,
            "carbon_kg": energy * g_per_kwh / 1000.0,
            "energy_kwh_per_sample": kwh_per_sample,
            "carbon_kg_per_sample": kwh_per_sample * g_per_kwh / 1000.0,
            **{c: intensity[c] for c in intensity.columns},
        },
        index=frame.index,
    )
