"""The whole bill of a language model's deployment beyond instance-hours: its energy and carbon per
million tokens, and the weights each instance pulls from where they are stored when it starts.

Weights are priced per deployment start: every instance (spot spares included, since they must
hold the weights to take over) copies them once to its local disk, and the replicas on one
instance share that copy. The source cloud bills the bytes out as for a training dataset
(:func:`perdollar.price.data_movement.egress_usd`, over all instances' bytes together); each
instance's load takes bytes / the slower of the staged-copy throughput and its network. How often
a deployment restarts is the operator's, so the pull is shown per start and kept out of the price
per token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.catalog import bill_data
from perdollar.catalog.model import Accelerator
from perdollar.frames import row_keys
from perdollar.price.bill import DataPlacement
from perdollar.price.data_movement import GB, egress_usd
from perdollar.price.llm_serving_energy import (
    DECODE_BUSY_FLOOR,
    DECODE_BUSY_PER_COMPUTE,
    SERVING_ENERGY_COLUMNS,
    serving_energy_columns,
)
from perdollar.workload.llm.architecture import DecoderArchitecture

WEIGHTS_COLUMNS = ("weights_gb", "weights_egress_usd", "weights_load_s")


@dataclass(frozen=True, slots=True)
class ServedRequests:
    """The request shape the deployments serve, which sets their compute per request."""

    input_tokens: int
    output_tokens: int


def weights_pull_columns(
    frame: pd.DataFrame, weights_bytes: Mapping[str, float], placement: DataPlacement
) -> pd.DataFrame:
    """Each row's weights (GB), the egress $ of one deployment start and one instance's load seconds.

    Without a placement (no ``--data-region``) the weights' size is still given, the rest is 0.
    """
    size = frame["precision"].map(lambda p: weights_bytes.get(str(p), np.nan)).to_numpy(dtype=np.float64)
    instances = pd.to_numeric(frame["instances"], errors="coerce").fillna(0).to_numpy(dtype=np.float64)
    egress = np.zeros(len(frame))
    seconds = np.zeros(len(frame))
    rates = bill_data.data_rates()
    source = rates.get(placement.cloud or "") if placement.region else None
    if source is not None and placement.region:
        network = (
            pd.to_numeric(frame["network_gbps"], errors="coerce").to_numpy(dtype=np.float64)
            if "network_gbps" in frame
            else np.full(len(frame), np.nan)
        )
        for index, (cloud, region) in enumerate(row_keys(frame, ("cloud", "region"))):
            if not np.isfinite(size[index]):
                continue
            pulled = size[index] * instances[index]
            egress[index] = egress_usd(pulled, source, placement.region, cloud, region)
            gbps = placement.copy_gbps or min(source.copy_gbps, rates.get(cloud, source).copy_gbps)
            if np.isfinite(network[index]) and network[index] > 0:
                gbps = min(gbps, network[index])
            seconds[index] = size[index] * 8.0 / (gbps * 1e9)
    return pd.DataFrame(
        {"weights_gb": size / GB, "weights_egress_usd": egress, "weights_load_s": seconds}, index=frame.index
    )


def with_serving_bill(
    frame: pd.DataFrame,
    arch: DecoderArchitecture,
    requests: ServedRequests,
    *,
    accelerators: Mapping[str, Accelerator],
    weights_bytes: Mapping[str, float],
    placement: DataPlacement,
) -> pd.DataFrame:
    """The priced deployments with their energy, carbon and weights-pull columns."""
    energy = serving_energy_columns(
        frame, arch, input_tokens=requests.input_tokens, output_tokens=requests.output_tokens,
        accelerators=accelerators, factors=bill_data.energy_factors(), grid=bill_data.grid_carbon(),
    )  # fmt: skip
    pull = weights_pull_columns(frame, weights_bytes, placement)
    kept = frame.drop(columns=[c for c in (*SERVING_ENERGY_COLUMNS, *WEIGHTS_COLUMNS) if c in frame])
    return pd.concat([kept, energy, pull], axis=1)


def describe_serving_bill(placement: DataPlacement) -> str:
    """One line saying how the deployments' energy, carbon and weights pull were priced."""
    factors = bill_data.energy_factors()
    energy = (
        f"energy: each replica's GPUs at TDP × ({factors.accelerator_idle_fraction:g} + "
        f"{1 - factors.accelerator_idle_fraction:g} × busy share), busy share = min(1, "
        f"{DECODE_BUSY_FLOOR:g} + {DECODE_BUSY_PER_COMPUTE:g} × compute share at the served rate) "
        "(fitted to H200 decode and prefill power), unused GPUs idle, hosts and PUE as for training; "
        "carbon: location-based grid intensity of the region"
    )
    if not placement.region:
        return energy
    rates = bill_data.data_rates()[placement.cloud or ""]
    return (
        f"weights: stored in {placement.cloud} {placement.region}; every instance pulls them once per "
        f"deployment start (egress at {placement.cloud}'s rates of {rates.as_of}, load at the slower of "
        f"{placement.copy_gbps or rates.copy_gbps:g} Gbit/s and the instance's network), not in the price "
        f"per token; {energy}"
    )
