"""An estimate: one priced candidate configuration (offer × nodes), with spot expectations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from perdollar.configuration import Configuration
from perdollar.predict.model import Basis


@dataclass(frozen=True, slots=True)
class Estimate:
    cloud: str
    instance_type: str
    region: str
    market: str  # on-demand | spot
    nodes: int
    accelerator: str | None  # accelerator key, None for CPU-only
    accelerators_per_node: float
    samples_per_second: float
    samples_per_second_low: float
    samples_per_second_high: float
    basis: Basis
    bottleneck: str
    price_per_hour: float  # all nodes, USD/h
    samples_per_dollar: float
    time_to_target_hours: float | None
    cost_to_target_usd: float | None
    expected_time_hours: float | None  # spot: with interruptions, checkpoints and restarts
    expected_cost_usd: float | None
    p_meet_deadline: float | None
    fits: bool
    excluded_reason: str  # empty when the candidate is feasible
    interruption_bucket: str | None = None
    checkpoint_interval_hours: float | None = None
    captured_at: str = ""
    vcpus_per_node: float = 0.0
    network_gbps: float | None = None
    # Inference deployments only: replicas, batch, max wait, predicted latency, $ per million requests.
    serving: dict[str, float | int | str] | None = None
    # Samples per dollar after spot losses (checkpoints, lost work, restarts): what ranks spot.
    effective_samples_per_dollar: float | None = None
    interruptions_per_hour: float | None = None  # all nodes together (N × per-node hazard)
    flags: tuple[str, ...] = ()  # catalog data-quality flags of the offer

    # Language models: the training plan this configuration runs (token and sentence), its model
    # FLOPs utilisation and the memory it holds per GPU; samples are then tokens.
    plan: str = ""
    plan_text: str = ""
    mfu: float | None = None
    memory_per_gpu_gib: float | None = None

    # Written into every JSON form of an estimate (``--json``, the store) beside the fields.
    json_properties: ClassVar[tuple[str, ...]] = ("label",)

    @property
    def feasible(self) -> bool:
        return not self.excluded_reason

    @property
    def configuration(self) -> Configuration:
        return Configuration(
            nodes=self.nodes,
            instance_type=self.instance_type,
            market=self.market or None,
            cloud=self.cloud or None,
            region=self.region or None,
            plan=self.plan or None,
        )

    @property
    def label(self) -> str:
        """``2x g5.12xlarge spot (aws us-east-1)``: what the tables print and the commands accept."""
        return self.configuration.label
