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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.fmt import format_hours
from perdollar.predict.llm_serving.fleet import DEFAULT_DISK_BYTES_PER_S, DEFAULT_NETWORK_GBPS

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
        low, high = float(np.nanmin(hours)), float(np.nanmax(hours))
        span = (
            format_hours(low)
            if format_hours(low) == format_hours(high)
            else (f"{format_hours(low)}–{format_hours(high)}")
        )
        added = f": {span} added to every job's time and billed on each of its nodes"
    return f"fixed costs per node: {', '.join(parts)}{added}"
