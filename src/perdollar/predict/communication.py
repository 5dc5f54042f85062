"""Data-parallel gradient all-reduce: a ring over the slowest link of the configuration.

    t = 2 (N − 1) / N · gradient_bytes / link_bandwidth + 2 (N − 1) · link_latency

Inside one host the link is the accelerator's interconnect (NVLink or PCIe, from the
accelerator table; its bidirectional figure halved); between hosts it is the instance's network
bandwidth at an achievable fraction (EFA/RDMA reaches more of the line rate than TCP). Where the
catalog does not state a network bandwidth (GCP and Azure) ``DEFAULT_NETWORK_GBPS`` is assumed.
"""

from __future__ import annotations

import numpy as np

DEFAULT_NETWORK_GBPS = 50.0  # GCP/Azure catalogs give no per-machine figure
DEFAULT_INTERCONNECT_GBPS = 32.0  # GB/s bidirectional: PCIe Gen3 x16 when the table is silent
LINK_EFFICIENCY = 0.7  # achievable fraction of an intra-host link (NCCL bus bandwidth vs line rate)
TCP_EFFICIENCY = 0.6
RDMA_EFFICIENCY = 0.9
INTRA_HOST_LATENCY_S = 5e-6
TCP_LATENCY_S = 50e-6
RDMA_LATENCY_S = 15e-6
DEFAULT_BACKWARD_OVERLAP = 0.8  # fraction of the backward pass that can hide the all-reduce


def ring_allreduce_seconds(gradient_bytes, devices, bandwidth_bytes_per_s, latency_s):
    """Seconds of one ring all-reduce (array-friendly); 0 for a single device."""
    n = np.asarray(devices, dtype=float)
    safe_n = np.maximum(n, 1.0)
    volume = 2.0 * (safe_n - 1.0) / safe_n * np.asarray(gradient_bytes, dtype=float)
    time = volume / np.asarray(bandwidth_bytes_per_s, dtype=float) + 2.0 * (safe_n - 1.0) * latency_s
    return np.where(n > 1, time, 0.0)


def link_for(nodes, accelerators_per_node, interconnect_gbps, network_gbps, efa_interfaces):
    """(bandwidth B/s, latency s) of the slowest link of each configuration (array-friendly)."""
    nodes = np.asarray(nodes, dtype=float)
    per_node = np.asarray(accelerators_per_node, dtype=float)
    intra = np.nan_to_num(np.asarray(interconnect_gbps, dtype=float), nan=DEFAULT_INTERCONNECT_GBPS)
    intra_bw = intra / 2.0 * 1e9 * LINK_EFFICIENCY
    network = np.nan_to_num(np.asarray(network_gbps, dtype=float), nan=DEFAULT_NETWORK_GBPS)
    rdma = np.asarray(efa_interfaces, dtype=float) > 0
    inter_bw = network / 8.0 * 1e9 * np.where(rdma, RDMA_EFFICIENCY, TCP_EFFICIENCY)
    inter_latency = np.where(rdma, RDMA_LATENCY_S, TCP_LATENCY_S)
    multi_node = nodes > 1
    within = per_node > 1
    bandwidth = np.where(multi_node, np.where(within, np.minimum(intra_bw, inter_bw), inter_bw), intra_bw)
    latency = np.where(multi_node, inter_latency, INTRA_HOST_LATENCY_S)
    return bandwidth, latency


def exposed_seconds(allreduce_s, backward_s, overlap=DEFAULT_BACKWARD_OVERLAP):
    """The part of the all-reduce the backward pass cannot hide."""
    return np.maximum(np.asarray(allreduce_s) - overlap * np.asarray(backward_s), 0.0)
