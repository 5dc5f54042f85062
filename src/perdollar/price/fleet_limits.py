"""What bounds a fleet beyond its load: GPU quotas, and what it emits.

A quota (:mod:`perdollar.catalog.quotas`) holds for a cloud, a region and an instance family. In
a fleet every interval's instances of the family in the region, each counting its GPUs, stay
within it: spot and on-demand instances of one family draw on the one quota, as they do for a
single deployment. Where several quota rows cover a family, each binds.

An instance-hour emits what the serving energy model gives one instance of its deployment at the
day's peak rate (:func:`perdollar.price.llm_serving_energy.deployment_kw`), times the grid intensity of
its region; a scale-up emits from its start, as it is billed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perdollar.catalog.quotas import Quota, instance_family

if TYPE_CHECKING:
    from perdollar.price.fleet import Fleet, FleetOption

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class QuotaGroup:
    """Options that draw on one quota in one region and family, and its GPUs."""

    gpus: float
    members: tuple[int, ...]  # indices into the options the group was made from
    what: str  # "the g6e quota in us-east-1"


def quota_groups(options: Sequence[FleetOption], quotas: Sequence[Quota]) -> tuple[QuotaGroup, ...]:
    """For every quota row, the options it covers, one group per region and family."""
    groups: dict[tuple[int, str, str], list[int]] = {}
    for k, option in enumerate(options):
        family = instance_family(option.cloud, option.instance_type)
        for index, quota in enumerate(quotas):
            if quota.applies(option.cloud, option.region, family):
                groups.setdefault((index, option.region, family), []).append(k)
    return tuple(
        QuotaGroup(quotas[index].gpus, tuple(members), f"the {family} quota in {region}")
        for (index, region, family), members in groups.items()
    )


def within_quotas(
    options: Sequence[FleetOption], counts: Sequence[int], groups: Sequence[QuotaGroup]
) -> bool:
    """Whether ``counts`` instances of ``options`` (one interval) fit every group's GPUs."""
    return all(
        sum(counts[k] * options[k].gpus_per_instance for k in group.members) <= group.gpus + 1e-9
        for group in groups
    )


def co2e_g(fleet: Fleet, durations: Sequence[float]) -> float:
    """Grams CO₂e of the fleet over the curve: its instance-hours and the lead of its scale-ups
    (NaN where an option's emissions are unknown)."""
    hours = len(fleet.instances)
    total = 0.0
    for h, counts in enumerate(fleet.instances):
        for k, option in enumerate(fleet.options):
            started = max(0, counts[k] - fleet.instances[(h - 1) % hours][k])
            seconds = counts[k] * durations[h] + started * option.scale_up_s
            total += option.co2e_g_per_hour * seconds / SECONDS_PER_HOUR
    return total
