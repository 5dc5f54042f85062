"""The catalog's data model: accelerators, instance types and priced offers.

One schema for every cloud (the way SkyPilot's catalog has one CSV schema with thin
per-cloud readers). Plain frozen data; derived facts are properties.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Literal

from perdollar.vocabulary import CLOUDS
from perdollar.vocabulary import Market as VocabularyMarket

# "aws", "gcp", "azure" and the GPU clouds a refresh brings in ("lambda", "runpod", "nebius", …).
Cloud = str
Market = VocabularyMarket  # on-demand and spot are captured; committed terms are derived from on-demand
SoftwareStack = Literal["cuda", "rocm", "neuron", "xla", "habana", "qaic", "cpu"]

# Dtype names used for peak rates everywhere in perdollar.
DTYPES = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")
# A new GPU instance is billed and booting for about two minutes before its server can load
# weights (boot, drivers, container start): an assumption, not a measured figure.
DEFAULT_INSTANCE_START_S = 120.0


@dataclass(frozen=True, slots=True)
class Accelerator:
    """One chip, per device (a K80 board counts as two, a TPU slice as its chips)."""

    key: str  # accelerator_specs key, e.g. "A100-SXM4-40GB"
    vendor: str
    family: str
    architecture: str
    memory_gib: float  # per device
    memory_bandwidth_gbps: float  # GB/s per device
    peak_fp32_tflops: float | None
    peak_tf32_tflops: float | None
    peak_fp16_tflops: float | None
    peak_bf16_tflops: float | None
    peak_fp8_tflops: float | None
    peak_int8_tops: float | None
    interconnect: str
    interconnect_bandwidth_gbps: float | None  # GB/s per device, bidirectional
    software_stack: SoftwareStack
    tdp_w: float | None = None
    compute_capability: str | None = None
    sm_count: int | None = None
    boost_clock_mhz: float | None = None
    memory_type: str | None = None  # HBM2e, GDDR6, …: what the bandwidth figure is made of
    form_factor: str | None = None
    confidence: str = "high"
    source: str = ""

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for ``dtype`` (one of :data:`DTYPES`), or None when the chip lacks it."""
        return {
            "fp32": self.peak_fp32_tflops,
            "tf32": self.peak_tf32_tflops,
            "fp16": self.peak_fp16_tflops,
            "bf16": self.peak_bf16_tflops,
            "fp8": self.peak_fp8_tflops,
            "int8": self.peak_int8_tops,
        }.get(dtype)

    @property
    def supports_bf16(self) -> bool:
        return bool(self.peak_bf16_tflops)


@dataclass(frozen=True, slots=True)
class NameParts:
    """An instance name taken apart: ``ml.g4dn.12xlarge`` → ml / g / 4 / dn / 12xlarge."""

    prefix: str | None
    family: str
    generation: str | None
    attributes: str
    size: str


@dataclass(frozen=True, slots=True)
class InstanceType:
    cloud: Cloud
    name: str
    vcpus: float
    memory_gib: float
    arch: str  # amd64 | arm64
    accelerator_name: str | None  # the cloud catalog's name (e.g. "A10G", "tpu-v5litepod-8")
    accelerator_key: str | None  # join key into the accelerator table
    accelerator_count: float  # devices per instance; fractional for partial GPUs
    accelerator_memory_gib_total: float
    network_gbps: float | None  # None where the catalog does not say (GCP, Azure)
    efa_interfaces: int = 0
    local_disk_gb: float | None = None
    name_parts: NameParts | None = None
    # Why no training framework can use this machine's accelerator (e.g. a virtual-desktop GPU
    # slice); empty when it is usable. Ranking keeps such machines out with this sentence.
    excluded_reason: str = ""

    @property
    def is_cpu_only(self) -> bool:
        return not self.accelerator_count

    @property
    def single_node_reason(self) -> str:
        """Why several of these machines are not offered as one training cluster ('' when they are).

        A hyperscaler's machines in a region share its network; a GPU cloud that states no network
        between its machines may rent them as separate hosts (a marketplace pod, a per-GPU VM), so a
        job is offered one of them, not several.
        """
        if self.cloud in CLOUDS or self.network_gbps is not None:
            return ""
        return f"{self.cloud} states no network between its machines: one node only"


@dataclass(frozen=True, slots=True)
class Offer:
    """An instance type in a region, in one market, at a price captured at a known time."""

    cloud: Cloud
    instance_type: str
    region: str
    market: Market
    # USD per instance-hour. Spot: the typical zone's price (the zones' median, or their mean where
    # the source keeps only min/mean/max), not the cheapest zone, whose capacity is the first to go.
    price_per_hour: float
    captured_at: dt.date
    price_max_per_hour: float | None = None  # highest zone price (spot), where known
    price_basis: str = ""  # how the price was obtained (e.g. estimated from the advisor)
    interruption_bucket: str | None = None  # AWS Spot Advisor bucket ("<5%", …); None = unknown
    flags: tuple[str, ...] = field(default_factory=tuple)  # data-quality notes, kept visible
    price_min_per_hour: float | None = None  # lowest zone price (spot), where known
