"""The fixed costs of a training job: what every node is billed for before its first step.

A job pays them once, however long it runs, so they decide short jobs: a 20-minute fine-tune on
four nodes pays four nodes' start-up for a quarter of the minutes of one node. Each node, at the
same time as the others:

- **provisioning**: the cloud finds, boots and hands over the machine;
- **image pull**: the training image's layers, inflated as they arrive;
- **download**: what the job reads before its first step (a fine-tune's base weights; a language
  model's dataset shard when its size is given) over the node's download rate;
- **start-up**: interpreter, CUDA and collective initialisation, model build and warm-up.

So the job waits for them once (added to its time, and counted against its deadline) and every
node is billed for them (node-hours × the node's price). Interruptions during them are not priced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from perdollar.fmt import format_hours
from perdollar.predict.llm_serving.fleet import DEFAULT_DISK_BYTES_PER_S, DEFAULT_NETWORK_GBPS
from perdollar.price.frame import SpotAssumptions, Target, price_frame

# Provisioning a GPU node until it takes commands: an assumption, generous on purpose (large GPU
# instances often take several minutes to be placed and boot); the sweep's per-job spend caps
# assume the same figure, so both read it from here.
PROVISIONING_SECONDS = 600.0
# Interpreter and CUDA start-up, model build, warm-up until step times settle: an assumption, the
# same allowance the sweep gives a benchmark beyond its measuring window.
STARTUP_SECONDS = 180.0
# A CUDA PyTorch training image: the CUDA "devel" tags of pytorch/pytorch on Docker Hub and NGC's
# PyTorch container are listed at roughly 10 GB compressed.
IMAGE_BYTES = 10e9
# Pulling inflates each gzip layer on one core (gzip's inflate is single-threaded), about
# 100–200 MB/s: the pull runs well below a GPU node's network.
IMAGE_PULL_BYTES_PER_S = 150e6
# A base model's weights as published for fine-tuning: bf16 safetensors, two bytes a parameter.
WEIGHT_BYTES_PER_PARAMETER = 2.0


# The priced columns a lead before the run (a data copy, the fixed costs) lengthens and bills.
TIME_COLUMNS = (
    "time_to_target_hours",
    "expected_time_hours",
    "expected_time_hours_low",
    "expected_time_hours_high",
)
COST_COLUMNS = ("cost_to_target_usd", "expected_cost_usd", "expected_cost_usd_low", "expected_cost_usd_high")
# A deadline the lead alone uses up leaves the run no time at all.
_NO_TIME_LEFT = 1e-9


@dataclass(frozen=True, slots=True)
class FixedCosts:
    """What each node does before the first step; bytes are per node, before any sharding."""

    provisioning_s: float = PROVISIONING_SECONDS
    startup_s: float = STARTUP_SECONDS
    image_bytes: float = IMAGE_BYTES
    weights_bytes: float = 0.0  # read whole by every node
    data_bytes: float = 0.0  # split over the nodes: each reads its shard


def download_bytes_per_s(network_gbps: np.ndarray) -> np.ndarray:
    """A node's download rate: the slower of its network (the catalog's, else the floor of GPU
    instances) and its boot volume (the serving model's figures, with their sources)."""
    network = np.where(np.isfinite(network_gbps) & (network_gbps > 0), network_gbps, DEFAULT_NETWORK_GBPS)
    return np.minimum(network * 1e9 / 8, DEFAULT_DISK_BYTES_PER_S)


def fixed_hours(frame: pd.DataFrame, fixed: FixedCosts) -> np.ndarray:
    """Wall hours before the first step of each candidate (``nodes``, ``network_gbps``)."""
    nodes = frame["nodes"].to_numpy(dtype=np.float64)
    network = pd.to_numeric(frame.get("network_gbps"), errors="coerce")
    gbps = np.full(len(frame), np.nan) if network is None else network.to_numpy(dtype=np.float64)
    rate = download_bytes_per_s(gbps)
    downloaded = fixed.weights_bytes + fixed.data_bytes / np.maximum(nodes, 1.0)
    seconds = (
        fixed.provisioning_s
        + fixed.image_bytes / IMAGE_PULL_BYTES_PER_S
        + downloaded / rate
        + fixed.startup_s
    )
    return np.round(seconds) / 3600.0  # whole seconds: candidates alike share one deadline pass


def describe_fixed_costs(fixed: FixedCosts, hours: np.ndarray | None = None) -> str:
    """One line saying which fixed costs were billed and how much time they added."""
    parts = [
        f"provisioning {fixed.provisioning_s:.0f} s",
        f"image pull {fixed.image_bytes / IMAGE_PULL_BYTES_PER_S:.0f} s ({fixed.image_bytes / 1e9:.0f} GB at "
        f"{IMAGE_PULL_BYTES_PER_S / 1e6:.0f} MB/s)",
    ]
    if fixed.weights_bytes:
        parts.append(f"base weights {fixed.weights_bytes / 1e9:.1f} GB per node")
    if fixed.data_bytes:
        parts.append(f"dataset {fixed.data_bytes / 1e9:,.0f} GB split over the nodes")
    if fixed.weights_bytes or fixed.data_bytes:
        parts[-1] += " over min(network, 1,000 MiB/s disk)"
    parts.append(f"start-up {fixed.startup_s:.0f} s")
    added = ""
    if hours is not None and np.size(hours) and np.isfinite(hours).any():
        low, high = format_hours(float(np.nanmin(hours))), format_hours(float(np.nanmax(hours)))
        low_number, _, low_unit = low.partition(" ")
        high_number, _, high_unit = high.partition(" ")
        if low == high:
            span = low
        elif low_unit == high_unit:
            span = f"{low_number}–{high_number} {high_unit}"  # 14–15 min
        else:
            span = f"{low}–{high}"
        added = f": {span} added to every job's time and billed on each of its nodes"
    return f"fixed costs per node: {', '.join(parts)}{added}"


def priced_after(
    joined: pd.DataFrame, lead: np.ndarray, target: Target, assumptions: SpotAssumptions
) -> pd.DataFrame:
    """:func:`price_frame` per distinct lead before the run, each with the deadline the lead leaves."""
    if not target.deadline_hours or not np.any(lead > 0):
        return price_frame(joined, target, assumptions)
    parts = []
    for value in np.unique(lead):
        rows = joined[lead == value]
        left = max(target.deadline_hours - float(value), _NO_TIME_LEFT)
        parts.append(price_frame(rows, replace(target, deadline_hours=left), assumptions))
    return pd.concat(parts).loc[joined.index]


def add_fixed_costs(priced: pd.DataFrame, hours: np.ndarray, target: Target) -> pd.DataFrame:
    """``priced`` with its fixed hours waited for once and billed on every node, in the totals."""
    out = priced
    billed = hours * out["price_per_hour"].to_numpy(dtype=np.float64)
    out["fixed_hours"] = hours
    out["fixed_usd"] = billed
    if not np.any(hours > 0):
        return out
    for column in TIME_COLUMNS:
        out[column] = out[column].to_numpy(dtype=np.float64) + hours
    for column in COST_COLUMNS:
        out[column] = out[column].to_numpy(dtype=np.float64) + billed
    samples = target.samples or 0.0
    if samples:
        if "bill_usd_per_sample" in out:
            per_sample = out["bill_usd_per_sample"].to_numpy(dtype=np.float64)
            out["bill_usd_per_sample"] = per_sample + billed / samples
        with np.errstate(divide="ignore", invalid="ignore"):
            per_dollar = out["effective_samples_per_dollar"].to_numpy(dtype=np.float64)
            out["effective_samples_per_dollar"] = 1.0 / (1.0 / per_dollar + billed / samples)
    return out
