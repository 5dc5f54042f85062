"""The collectives of a training plan: closed-form volumes and the links they cross.

Per GPU, for a buffer of B bytes (the whole, unsharded size) over n ranks, a ring moves:
all-reduce 2(n−1)/n·B, all-gather and reduce-scatter (n−1)/n·B each, with 2(n−1) and (n−1)
latency steps. Inside a host the link is the accelerator's interconnect (NVLink/NVSwitch or
PCIe: the catalog's bidirectional figure, halved, at an achievable fraction); a group that
spans hosts is held to the instance's network, shared by the host's GPUs as NCCL's rings share
the NICs (EFA/InfiniBand reaches more of the line rate than TCP), and divided among the host's
tensor-parallel ranks, whose data-parallel groups run at once. Layout: tensor parallel
innermost (inside a host), then data parallel, then pipeline stages across hosts.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_NETWORK_GBPS = 50.0  # the catalog gives no per-machine figure for some clouds
DEFAULT_INTERCONNECT_GBPS = 32.0  # GB/s bidirectional, PCIe Gen3 x16, when the table is silent
INTRA_HOST_LATENCY_S = 5e-6
TCP_LATENCY_S = 50e-6
RDMA_LATENCY_S = 15e-6


@dataclass(frozen=True, slots=True)
class Link:
    """Achievable bytes per second one rank sends, and the latency of one ring step."""

    bandwidth: float
    latency: float
    name: str  # "NVLink", "PCIe", "EFA", "network"


def all_reduce_bytes(buffer_bytes: float, ranks: int) -> float:
    return 2.0 * (ranks - 1) / ranks * buffer_bytes if ranks > 1 else 0.0


def all_gather_bytes(buffer_bytes: float, ranks: int) -> float:
    """Also a reduce-scatter's volume: each rank sends all but its own shard once."""
    return (ranks - 1) / ranks * buffer_bytes if ranks > 1 else 0.0


def all_to_all_bytes(buffer_bytes: float, ranks: int) -> float:
    """Each rank keeps its own 1/n of the buffer and sends the rest, one piece to each peer."""
    return (ranks - 1) / ranks * buffer_bytes if ranks > 1 else 0.0


def all_reduce_seconds(buffer_bytes: float, ranks: int, link: Link) -> float:
    if ranks <= 1:
        return 0.0
    return all_reduce_bytes(buffer_bytes, ranks) / link.bandwidth + 2 * (ranks - 1) * link.latency


def all_gather_seconds(buffer_bytes: float, ranks: int, link: Link, pieces: int = 1) -> float:
    """``pieces``: the buffer gathered in that many collectives (FSDP: one per layer), each paying
    the ring's latency."""
    if ranks <= 1:
        return 0.0
    return all_gather_bytes(buffer_bytes, ranks) / link.bandwidth + pieces * (ranks - 1) * link.latency


def point_to_point_seconds(message_bytes: float, link: Link) -> float:
    return message_bytes / link.bandwidth + link.latency


def intra_host_link(interconnect: str, interconnect_gbps: float | None, efficiency: float) -> Link:
    bandwidth = (interconnect_gbps or DEFAULT_INTERCONNECT_GBPS) / 2.0 * 1e9 * efficiency
    name = "NVLink" if "nvlink" in interconnect.lower() or "nvswitch" in interconnect.lower() else "PCIe"
    if interconnect_gbps and name == "PCIe" and interconnect_gbps > 300:
        name = "NVLink"  # fabrics the table names otherwise (Infinity Fabric, ICI) at NVLink rates
    return Link(bandwidth, INTRA_HOST_LATENCY_S, name)


def inter_host_link(
    network_gbps: float | None,
    efa_interfaces: int | None,
    *,
    rdma_efficiency: float,
    tcp_efficiency: float,
) -> Link:
    """The host's network as one rank of a cross-host ring sees it (the NICs carry one ring's traffic)."""
    rdma = bool(efa_interfaces and efa_interfaces > 0)
    network = network_gbps if network_gbps else DEFAULT_NETWORK_GBPS
    bandwidth = network / 8.0 * 1e9 * (rdma_efficiency if rdma else tcp_efficiency)
    return Link(bandwidth, RDMA_LATENCY_S if rdma else TCP_LATENCY_S, "EFA" if rdma else "network")


def group_link(spans_hosts: bool, intra: Link, inter: Link) -> Link:
    """A ring's slowest hop: the network when the group spans hosts, never above the host's links."""
    if not spans_hosts:
        return intra
    return Link(min(intra.bandwidth, inter.bandwidth), inter.latency, inter.name)
