"""The options of a fleet over a day (``recommend --inference --load-curve``): how it autoscales."""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.catalog.model import DEFAULT_INSTANCE_START_S
from perdollar.price.fleet import (
    DEFAULT_AVAILABILITY,
    DEFAULT_MIN_REPLICAS,
    DEFAULT_TARGET_UTILISATION,
    MIN_TARGET_UTILISATION,
)
from perdollar.question import declared


@dataclass(frozen=True, slots=True)
class FleetFlags:
    target_utilisation: float = declared(
        DEFAULT_TARGET_UTILISATION, "--target-utilisation",
        "--load-curve/--trace: share of a replica's SLO capacity the autoscaler fills.",
        minimum=MIN_TARGET_UTILISATION,
    )  # fmt: skip
    min_replicas: int = declared(
        DEFAULT_MIN_REPLICAS, "--min-replicas", "--load-curve/--trace: replicas kept at the quietest hour.",
        minimum=0,
    )  # fmt: skip
    instance_start_s: float = declared(
        DEFAULT_INSTANCE_START_S, "--instance-start-s",
        "--load-curve/--trace: seconds from asking for an instance to its server loading weights.",
        unit="s", minimum=0,
    )  # fmt: skip
    availability: float = declared(
        DEFAULT_AVAILABILITY, "--availability",
        "--load-curve/--trace: share of intervals that must keep their capacity through spot reclaims.",
        minimum=0,
    )  # fmt: skip
