"""The whole bill of a training candidate: instance-hours plus data movement, storage, energy, carbon.

:func:`priced_with_bill` prices the joined candidates as :func:`perdollar.price.table.price_table`
does, then adds the bill's other lines as their own columns and into the totals:

- ``egress_usd``, ``transfer_hours``: copying the dataset from its region (``price.data_movement``);
  the copy happens before the run, so the deadline left for the run is shorter by it;
- ``storage_usd``: the kept checkpoints, and the dataset's copy away from home, for the run's hours;
- ``energy_kwh``, ``carbon_kg`` (and per sample): ``price.energy``;
- a capacity block's booked hours the job leaves idle (``price.blocks``).
- ``fixed_hours``, ``fixed_usd``: what every node does before the first step (``price.fixed_costs``),
  waited for once and billed on every node; like the copy, it shortens the deadline left for the run.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.catalog import bill_data
from perdollar.catalog.bill_data import CloudDataRates
from perdollar.catalog.price_age import is_stale
from perdollar.frames import map_distinct, require_columns
from perdollar.predict.frame import PREDICTION_COLUMNS
from perdollar.price.blocks import billed_in_whole_blocks
from perdollar.price.data_movement import DEFAULT_CHECKPOINTS_KEPT, movement_columns, storage_usd
from perdollar.price.energy import energy_columns
from perdollar.price.fixed_costs import (
    COST_COLUMNS,
    TIME_COLUMNS,
    FixedCosts,
    add_fixed_costs,
    fixed_hours,
    priced_after,
)
from perdollar.price.frame import PRICED_COLUMNS, SpotAssumptions, Target
from perdollar.price.table import join_predictions

# What the bill adds to the priced table.
BILL_COLUMNS = (
    "egress_usd",
    "transfer_hours",
    "storage_usd",
    "bill_usd_per_sample",
    "energy_kwh",
    "carbon_kg",
    "energy_kwh_per_sample",
    "carbon_kg_per_sample",
    "grid_gco2e_per_kwh",
    "grid_carbon_year",
    "fixed_hours",
    "fixed_usd",
)


@dataclass(frozen=True, slots=True)
class DataPlacement:
    """Where the training data lives and how big it is (None: no data movement is priced)."""

    size_bytes: float = 0.0
    cloud: str | None = None
    region: str | None = None
    copy_gbps: float | None = None  # None: the clouds' stated staged-copy throughput
    state_bytes: float = 0.0  # one checkpoint: weights and optimizer state
    checkpoints_kept: int = DEFAULT_CHECKPOINTS_KEPT


def _add_data_lines(
    priced: pd.DataFrame, placement: DataPlacement, rates: Mapping[str, CloudDataRates], target: Target
) -> pd.DataFrame:
    out = priced
    lead = out["transfer_hours"].to_numpy(dtype=np.float64)
    moved = out["egress_usd"].to_numpy(dtype=np.float64) > 0
    moved |= lead > 0
    run_hours = out["expected_time_hours"].to_numpy(dtype=np.float64)
    # Storage is priced with the data's placement: without it the question says nothing about storage.
    kept = placement.state_bytes * placement.checkpoints_kept if placement.region else 0.0
    stored = kept + np.where(moved, placement.size_bytes, 0.0)

    def storage_rate(cloud: object) -> float:
        return rates[str(cloud)].storage_usd_per_gb_month if str(cloud) in rates else np.nan

    per_gb_month = np.asarray(map_distinct(out["cloud"], storage_rate), dtype=np.float64)
    out["storage_usd"] = storage_usd(stored, run_hours, per_gb_month)
    extra = out["egress_usd"].to_numpy(dtype=np.float64) + np.nan_to_num(out["storage_usd"].to_numpy())
    for column in TIME_COLUMNS:
        out[column] = out[column].to_numpy(dtype=np.float64) + lead
    for column in COST_COLUMNS:
        out[column] = out[column].to_numpy(dtype=np.float64) + extra
    samples = target.samples or 0.0
    out["bill_usd_per_sample"] = extra / samples if samples else 0.0
    if samples:
        with np.errstate(divide="ignore", invalid="ignore"):
            per_dollar = out["effective_samples_per_dollar"].to_numpy(dtype=np.float64)
            out["effective_samples_per_dollar"] = 1.0 / (1.0 / per_dollar + extra / samples)
    return out


def priced_with_bill(
    offers: pd.DataFrame,
    predictions: pd.DataFrame,
    target: Target,
    assumptions: SpotAssumptions,
    *,
    placement: DataPlacement,
    tdp_by_key: Mapping[str, float | None],
    fixed: FixedCosts | None = None,
) -> pd.DataFrame:
    """One priced row per (offer, node count), the bill's other lines included; with ``fixed``
    and a target, each job's fixed costs too (a rate without a target has no job to charge)."""
    require_columns(predictions, PREDICTION_COLUMNS, "the prediction frame")
    rates = bill_data.data_rates()
    joined = join_predictions(offers, predictions)
    source = rates.get(placement.cloud or "") if placement.region else None
    movement = movement_columns(
        joined,
        size_bytes=placement.size_bytes,
        source=source,
        source_region=placement.region,
        rates=rates,
        copy_gbps=placement.copy_gbps,
    )
    joined = pd.concat([joined, movement], axis=1)
    before_run = np.zeros(len(joined))
    if fixed is not None and target.samples:
        before_run = fixed_hours(joined, fixed)
    lead = movement["transfer_hours"].to_numpy(dtype=np.float64) + before_run
    priced = priced_after(joined, lead, target, assumptions)
    # Energy is drawn by the run itself, before the copy time is added to the totals.
    energy = energy_columns(priced, tdp_by_key, bill_data.energy_factors(), bill_data.grid_carbon())
    priced = pd.concat([priced, energy], axis=1)
    priced = _add_data_lines(priced, placement, rates, target)
    priced = billed_in_whole_blocks(add_fixed_costs(priced, before_run, target), target)
    require_columns(priced, BILL_COLUMNS, "the billed table")
    return require_columns(priced, PRICED_COLUMNS, "the priced table")


def describe_bill(placement: DataPlacement) -> str:
    """One line saying how the bill's other lines were priced, with the data's dates."""
    factors = bill_data.energy_factors()
    years = sorted({g.year for g in bill_data.grid_carbon().values()})
    pue = "/".join(f"{cloud} {value:g}" for cloud, value in factors.pue.items())
    energy = (
        f"energy: TDP × ({factors.accelerator_idle_fraction:g} + {1 - factors.accelerator_idle_fraction:g}"
        f" × busy share) + host {factors.host_idle_w_per_vcpu:g}–{factors.host_busy_w_per_vcpu:g} W/vCPU,"
        f" PUE {pue}; carbon: location-based grid intensity of the region (sources of"
        f" {'/'.join(str(y) for y in years)})"
    )
    if not placement.region:
        return energy
    rates = bill_data.data_rates()[placement.cloud or ""]
    gbps = placement.copy_gbps or rates.copy_gbps
    stale = " (stale)" if is_stale(rates.as_of, dt.date.today()) else ""
    return (
        f"data: {placement.size_bytes / 1e12:g} TB (decimal) in {placement.cloud} {placement.region}; "
        f"egress at {placement.cloud}'s rates of {rates.as_of}{stale}, "
        f"copied at {gbps:g} Gbit/s before the run; "
        f"{placement.checkpoints_kept} checkpoints kept in object storage; {energy}"
    )
