"""Choosing a fleet for a day of traffic: the static-peak baseline, one type autoscaled, a mix.

The integer program over a mix is solved on a short list of candidates: those cheapest per
request of the day's mix and those cheapest per request of each class alone (a machine cheap
for long prompts may be dear for short ones). ``benchmarks/fleet_over_a_day.py`` measures what
the short list gives up against the program over every candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from perdollar.predict.llm_serving.fleet import IntervalReplay
from perdollar.price.fleet import (
    Fleet,
    FleetOption,
    FleetPolicy,
    class_load,
    mixed_fleet,
    single_type_fleet,
    spot_terms,
    with_added_instances,
)
from perdollar.price.fleet_floor import with_on_demand_floor
from perdollar.price.fleet_limits import QuotaGroup, co2e_g, quota_groups, within_quotas

SHORT_LIST_BY_MIX = 12
SHORT_LIST_BY_CLASS = 6


@dataclass(frozen=True, slots=True)
class FleetChoice:
    static_peak: Fleet
    autoscaled: Fleet  # the cheapest single type, autoscaled
    mixed: Fleet  # the integer program's fleet (no dearer than the autoscaled single type)
    candidates: int  # options considered
    short_list: int  # options given to the integer program


def _cost_per_request(
    option: FleetOption, shares: Sequence[float], interval_s: float, policy: FleetPolicy
) -> float:
    """Dollars (by carbon: grams) per request/s of the mix an hour."""
    terms = spot_terms(option, interval_s, policy.availability)
    load = class_load(option, shares)  # replicas per request/s of the mix
    usable = option.replicas_per_instance * terms.capacity_share
    rate = option.co2e_g_per_hour if policy.by_carbon else terms.price_per_hour
    return rate * load / usable if math.isfinite(load) else math.inf


def short_list(
    options: Sequence[FleetOption], mix: Sequence[float], interval_s: float, policy: FleetPolicy
) -> list[FleetOption]:
    """The candidates cheapest per request of the mix, then of each class alone."""
    chosen: dict[int, FleetOption] = {}

    def cheapest(shares: Sequence[float], count: int) -> None:
        costs = [(_cost_per_request(o, shares, interval_s, policy), i) for i, o in enumerate(options)]
        for cost, index in sorted(costs)[:count]:
            if math.isfinite(cost):
                chosen.setdefault(index, options[index])

    cheapest(mix, SHORT_LIST_BY_MIX)
    if len(mix) > 1:
        for c in range(len(mix)):
            cheapest([1.0 if i == c else 0.0 for i in range(len(mix))], SHORT_LIST_BY_CLASS)
    return list(chosen.values())


def choose_fleet(
    options: Sequence[FleetOption], rates: Sequence[Sequence[float]], durations: Sequence[float],
    policy: FleetPolicy,
) -> FleetChoice | None:  # fmt: skip
    """The three fleets, or None when no candidate serves every class (within the quotas; by
    carbon, among the candidates whose emissions are known)."""
    if policy.by_carbon:
        options = [o for o in options if math.isfinite(o.co2e_g_per_hour)]
    # Each fleet keeps its on-demand floor before it is weighed: a spot fleet that needs on-demand
    # twins to meet the availability target is priced with them.
    statics = [with_on_demand_floor(f, durations, policy) for o in options
               if (f := single_type_fleet(o, rates, durations, policy, static=True))]  # fmt: skip
    scaled = [with_on_demand_floor(f, durations, policy) for o in options
              if (f := single_type_fleet(o, rates, durations, policy, static=False))]  # fmt: skip
    if not statics or not scaled:
        return None

    def ranked(fleet: Fleet) -> tuple[float, float]:
        return (co2e_g(fleet, durations), fleet.cost) if policy.by_carbon else (fleet.cost, 0.0)

    static_peak = min(statics, key=ranked)
    autoscaled = min(scaled, key=ranked)
    totals = [sum(r[c] * d for r, d in zip(rates, durations, strict=True)) for c in range(len(rates[0]))]
    mix = [t / sum(totals) for t in totals]
    listed = short_list(options, mix, max(durations), policy)
    for option in autoscaled.options:  # with its on-demand twin, where the floor gave it one
        if option not in listed:
            listed.append(option)
    mixed = mixed_fleet(listed, rates, durations, policy)
    mixed = with_on_demand_floor(mixed, durations, policy) if mixed is not None else None
    if mixed is None or ranked(mixed) > ranked(autoscaled):
        mixed = autoscaled
    return FleetChoice(static_peak, autoscaled, mixed, len(options), len(listed))


# Rounds of adding an instance where the replay still misses: each round replays only the
# intervals that missed, and three cover the cases where the capacity model was a replica short.
REPAIR_ROUNDS = 3

Replayer = Callable[[Fleet, Sequence[int]], Mapping[int, IntervalReplay]]


@dataclass(frozen=True, slots=True)
class RepairedFleet:
    fleet: Fleet
    replay: tuple[IntervalReplay, ...]
    added_instances: tuple[int, ...]  # per interval, by the replay


def _busiest(fleet: Fleet, interval: int, groups: Sequence[QuotaGroup] = ()) -> int | None:
    """The option whose replicas the routed requests load most in ``interval`` and that one more
    instance keeps within its quotas (None: nothing routed, or no room)."""
    best, busiest = -1.0, None
    counts = fleet.instances[interval]
    for k, option in enumerate(fleet.options):
        load = class_load(option, fleet.routed[interval][k])
        if load <= 0:
            continue
        more = [n + (1 if i == k else 0) for i, n in enumerate(counts)]
        if not within_quotas(fleet.options, more, groups):
            continue
        replicas = counts[k] * option.replicas_per_instance
        busy = load / replicas if replicas else math.inf
        if busy > best:
            best, busiest = busy, k
    return busiest


def repaired_by_replay(
    fleet: Fleet, replay: Sequence[IntervalReplay], replay_again: Replayer, durations: Sequence[float],
    policy: FleetPolicy, rounds: int = REPAIR_ROUNDS,
) -> RepairedFleet:  # fmt: skip
    """Where the replay misses the SLO, one more instance of the busiest option, replayed again.

    The plan sizes replicas from the predicted capacity at the SLO; the replay serves the requests
    one by one, with their queueing, and may find an interval a replica short."""
    replays = list(replay)
    added = [[0] * len(fleet.options) for _ in replays]
    groups = quota_groups(fleet.options, policy.quotas)
    for _ in range(rounds):
        step = [[0] * len(fleet.options) for _ in replays]
        for h, outcome in enumerate(replays):
            busiest = None if outcome.meets_slo else _busiest(fleet, h, groups)
            if busiest is not None:
                step[h][busiest] = 1
                added[h][busiest] += 1
        missed = [h for h, row in enumerate(step) if any(row)]
        if not missed:
            break
        fleet = with_added_instances(fleet, step, durations, policy)
        for h, outcome in replay_again(fleet, missed).items():
            replays[h] = outcome
    return RepairedFleet(fleet, tuple(replays), tuple(sum(row) for row in added))
