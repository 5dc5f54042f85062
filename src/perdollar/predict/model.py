"""What a prediction says: throughput on one configuration, with its band and basis."""

from __future__ import annotations

from dataclasses import dataclass, field

from perdollar.vocabulary import Basis, Bottleneck


@dataclass(frozen=True, slots=True)
class Prediction:
    """Throughput of a workload on ``nodes`` × ``accelerators_per_node`` of one instance type."""

    instance_type: str
    accelerator_key: str | None
    nodes: int
    accelerators_per_node: float
    samples_per_second: float  # global, all devices of all nodes
    samples_per_second_low: float
    samples_per_second_high: float
    basis: Basis
    bottleneck: Bottleneck
    step_time_s: float  # one data-parallel step (per-device batch = the profile's batch)
    compute_time_s: float  # on one device, before communication and caps
    communication_time_s: float  # exposed (not overlapped) all-reduce time per step
    fits: bool
    fit_reason: str = ""  # why it does not fit (or headroom remark)
    max_batch_that_fits: int | None = None
    breakdown_s: dict[str, float] = field(default_factory=dict)  # per operator class, one device
    excluded_reason: str = ""  # hard exclusion (software stack, dtype) — empty when usable
    precision_remark: str = ""  # the precision it runs in instead of the one asked, and why
