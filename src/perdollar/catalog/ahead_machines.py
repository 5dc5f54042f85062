"""Machines that a cloud sells only ahead (EC2 Capacity Blocks for ML), so that the bundled
``market_prices.csv`` has something to price.

The offline data folder lists a machine in ``instances_unified.csv`` only where it has an on-demand
price; AWS sells ``p5e.48xlarge`` and ``trn2.48xlarge`` in capacity blocks alone, so they have none
there. Their hardware comes from the folder's ``aws_instance_types.csv`` (the EC2 instance-type
data: vCPUs, memory, accelerators, network, EFA, local NVMe). Such a machine has no offer in the
snapshot; the capacity-block market makes its offers from the published prices.
"""

from __future__ import annotations

import math

import pandas as pd

from perdollar.catalog.markets import bundled_prices

MIB_PER_GIB = 1024.0


def _optional(value: object) -> float:
    return float(value) if pd.notna(value) else math.nan  # type: ignore[arg-type]


def _accelerator_key(name: str, keys: dict[str, str], aliases: dict[str, str]) -> str:
    return keys.get(name.lower()) or aliases.get(name.lower(), "")


def ahead_only_machines(
    aws_types: pd.DataFrame, listed: pd.DataFrame, accelerators: pd.DataFrame, aliases: pd.DataFrame
) -> pd.DataFrame:
    """Rows in the snapshot's instance-type schema for the AWS machines a bundled ahead-market
    price names that ``listed`` (instance types) lacks; one the instance-type data lacks too is left out."""
    have = set(listed.loc[listed["cloud"] == "aws", "name"])
    wanted = sorted({p.instance_type for p in bundled_prices() if p.cloud == "aws"} - have)
    known = aws_types.set_index("instance_type")
    keys = {str(k).lower(): str(k) for k in accelerators["key"]}
    memory = dict(zip(accelerators["key"], accelerators["memory_gib"], strict=True))
    alias_keys = {
        str(a).lower(): str(k) for a, k in zip(aliases["alias"], aliases["accelerator_key"], strict=True)
    }
    rows = []
    for name in wanted:
        if name not in known.index:
            continue
        spec = known.loc[name]
        gpu = isinstance(spec["gpu_name"], str) and spec["gpu_name"] != ""
        chip = str(spec["gpu_name"] if gpu else spec["accelerator_name"])
        key = _accelerator_key(chip, keys, alias_keys)
        count = float(spec["gpu_count"] if gpu else spec["accelerator_count"])
        per_chip = float(spec["gpu_memory_mib"]) / MIB_PER_GIB if gpu else float(memory.get(key, math.nan))
        rows.append(
            {
                "cloud": "aws",
                "name": name,
                "vcpus": float(spec["vcpu"]),
                "memory_gib": float(spec["memory_mib"]) / MIB_PER_GIB,
                "arch": str(spec["arch"]),
                "accelerator_name": chip.upper() if gpu else key,
                "accelerator_key": key,
                "accelerator_count": count,
                "accelerator_memory_gib_total": per_chip * count,
                "network_gbps": float(spec["network_bandwidth_mbps"]) / 1000.0,
                "efa_interfaces": int(spec["efa_interfaces"]) if pd.notna(spec["efa_interfaces"]) else 0,
                "local_disk_gb": float(spec["local_nvme_gb"])
                if pd.notna(spec["local_nvme_gb"])
                else math.nan,
                "excluded_reason": "",
            }
        )
    return pd.DataFrame(rows)
