"""The on-demand floor under a fleet's spot instances, sized to the availability target.

Each spot instance is reclaimed on its own at its pool's hourly hazard λ — the middle of its
monthly interruption share, as :func:`perdollar.price.fleet.spot_terms` prices the fallback — so
within an interval of Δt hours one is lost with p = 1 − exp(−λΔt). A machine (one instance type,
region, degree, format and engine) holds S spot and D on-demand instances of which ``needed`` carry
the load routed to it at full SLO capacity; the interval keeps that capacity when at most
S + D − needed spot instances are lost, which happens with P[Binomial(S, p) ≤ S + D − needed].
That probability must reach the availability target, every interval.

At an availability of 99 % or more, no interval rests on spot without room for one reclaim
(S + D − needed ≥ 1 wherever S > 0): a reclaimed instance is replaced only after the scale-up delay
(instance start and weights load, minutes), longer than the notice the clouds give (two minutes on
AWS, 30 seconds on Google Cloud and Azure), and reclaims of one pool come together, which a
per-instance rate understates. So a lone spot replica becomes on-demand, its cheapest repair.

Per interval and machine the cheapest mix is chosen: spot instances turned on-demand and on-demand
twins (the same machine on demand, at the on-demand price the option carries) added; twins take
their share of the machine's requests, and count against the quotas as any instance does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from perdollar.price.fleet import (
    SECONDS_PER_HOUR,
    Fleet,
    FleetOption,
    FleetPolicy,
    class_load,
    interval_costs,
    spot_terms,
)
from perdollar.price.fleet_limits import quota_groups, within_quotas
from perdollar.price.spot import BUCKET_MONTHLY_FRACTION, UNKNOWN_MONTHLY_FRACTION, monthly_fraction_to_hazard

# From this availability up, a spot instance is never the only room for the load (see above).
ROOM_FOR_ONE_RECLAIM = 0.99


@dataclass(frozen=True, slots=True)
class IntervalSurvival:
    """What one interval keeps through spot reclaims."""

    replicas: int
    needed_replicas: int  # carrying the routed load at full SLO capacity
    after_one_reclaim: int  # replicas left when the largest spot instance is reclaimed
    kept_probability: float  # that every machine keeps its needed capacity through the interval
    on_demand_instances: int


def reclaim_probability(option: FleetOption, interval_s: float) -> float:
    """That one spot instance of ``option`` is reclaimed within ``interval_s`` (0 on demand)."""
    if not option.is_spot:
        return 0.0
    central = BUCKET_MONTHLY_FRACTION.get(option.interruption_bucket, UNKNOWN_MONTHLY_FRACTION)[0]
    return 1.0 - math.exp(-float(monthly_fraction_to_hazard(central)) * interval_s / SECONDS_PER_HOUR)


def kept_probability(spot: int, spare: int, p: float) -> float:
    """P[Binomial(spot, p) ≤ spare]: no more than ``spare`` of ``spot`` instances are reclaimed."""
    if spare < 0:
        return 0.0
    if spare >= spot or p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    # Term by term from k = 0: each is the last × (spot − k)/(k + 1) × p/(1 − p); past the mean they
    # only shrink, so the sum stops once they no longer move it.
    term = (1.0 - p) ** spot
    total = term
    for k in range(spare):
        term *= (spot - k) / (k + 1) * p / (1.0 - p)
        total += term
        if k > spot * p and term < 1e-18 * total:
            break
    return min(1.0, total)


def _machine(option: FleetOption) -> tuple[object, ...]:
    return (option.cloud, option.region, option.instance_type, option.tensor_parallel, option.precision,
            option.engine, option.kv_precision, option.replicas_per_instance)  # fmt: skip


def on_demand_twin(option: FleetOption) -> FleetOption | None:
    """The spot option's machine on demand, at its on-demand price (None where it has none)."""
    price = option.fallback_price_per_hour
    if not option.is_spot or not math.isfinite(price) or price <= 0:
        return None
    return replace(
        option, label=option.label.replace(" spot ", " on-demand ", 1), market="on-demand",
        price_per_hour=price, interruption_bucket="", fallback_price_per_hour=math.nan,
    )  # fmt: skip


def meets_target(spot: int, on_demand: int, needed: int, p: float, availability: float) -> bool:
    spare = spot + on_demand - needed
    if spot and availability >= ROOM_FOR_ONE_RECLAIM and spare < 1:
        return False
    return kept_probability(spot, spare, p) >= availability - 1e-12


def floor_counts(
    spot: int, on_demand: int, needed: int, p: float, availability: float, prices: tuple[float, float],
    *, may_add: bool = True,
) -> tuple[int, int]:  # fmt: skip
    """The cheapest (spot, on-demand) from ``spot`` and ``on_demand`` instances by turning spot ones
    on-demand and adding on-demand twins, that meets the target (``prices``: spot, on demand)."""
    if meets_target(spot, on_demand, needed, p, availability):
        return spot, on_demand  # no floor needed: an on-demand instance costs more than a spot one
    spot_price, on_demand_price = prices
    best: tuple[float, int, int, int] | None = None
    for turned in range(spot + 1):
        s, d = spot - turned, on_demand + turned
        # The fewest twins that meet the target with s spot instances left: each one adds a spare.
        limit = d + (needed + 1 if may_add else 0)
        while d <= limit and not meets_target(s, d, needed, p, availability):
            d += 1
        if d > limit:
            continue
        key = (s * spot_price + (d - on_demand) * on_demand_price, s + d, s, d)
        if best is None or key < best:
            best = key
    return (best[2], best[3]) if best is not None else (spot, on_demand)


def with_on_demand_floor(fleet: Fleet, durations: Sequence[float], policy: FleetPolicy) -> Fleet:
    """``fleet`` with each interval's spot load kept at the availability target (module docstring)."""
    options = list(fleet.options)
    instances = [list(row) for row in fleet.instances]
    routed = [[list(rates) for rates in row] for row in fleet.routed]
    classes = len(routed[0][0]) if routed and routed[0] else 0
    interval = max(durations)
    for k in range(len(fleet.options)):
        option = options[k]
        twin = on_demand_twin(option)
        if twin is None:
            continue
        t = next(
            (i for i, o in enumerate(options) if not o.is_spot and _machine(o) == _machine(option)), None
        )
        p = reclaim_probability(option, interval)
        prices = (spot_terms(option, interval, policy.availability).price_per_hour, twin.price_per_hour)
        for h in range(len(instances)):
            spot = instances[h][k]
            if not spot:
                continue
            held = instances[h][t] if t is not None else 0
            load = class_load(option, routed[h][k]) + (
                class_load(option, routed[h][t]) if t is not None else 0
            )
            needed = math.ceil(load / option.replicas_per_instance - 1e-9)
            counts = floor_counts(spot, held, needed, p, policy.availability, prices)
            if t is None and counts[1] > held:
                options.append(twin)
                t = len(options) - 1
                for row, rates in zip(instances, routed, strict=True):
                    row.append(0)
                    rates.append([0.0] * classes)
            if t is None or counts == (spot, held):
                continue
            trial = list(instances[h])
            trial[k], trial[t] = counts
            if not within_quotas(options, trial, quota_groups(options, policy.quotas)):
                counts = floor_counts(spot, held, needed, p, policy.availability, prices, may_add=False)
                trial[k], trial[t] = counts
            total = [a + b for a, b in zip(routed[h][k], routed[h][t], strict=True)]
            share = counts[0] / (counts[0] + counts[1]) if sum(counts) else 0.0
            routed[h][k] = [rate * share for rate in total]
            routed[h][t] = [rate * (1 - share) for rate in total]
            instances[h] = trial
    if len(options) == len(fleet.options) and [list(r) for r in fleet.instances] == instances:
        return fleet
    used = [k for k in range(len(options)) if any(row[k] for row in instances)]
    chosen = tuple(options[k] for k in used)
    counts_out = tuple(tuple(row[k] for k in used) for row in instances)
    return replace(
        fleet, options=chosen, instances=counts_out,
        routed=tuple(tuple(tuple(row[k]) for k in used) for row in routed),
        cost_per_interval=interval_costs(chosen, counts_out, durations, policy),
    )  # fmt: skip


def fleet_survival(fleet: Fleet, durations: Sequence[float]) -> tuple[IntervalSurvival, ...]:
    """Per interval: the replicas, those the load needs, those left after one spot reclaim, and the
    chance every machine keeps its needed capacity (reclaims independent, as the floor sizes them)."""
    interval = max(durations)
    out = []
    for h, counts in enumerate(fleet.instances):
        machines: dict[tuple[object, ...], list[float]] = {}  # spot, on demand, load, p, replicas each
        for k, option in enumerate(fleet.options):
            entry = machines.setdefault(_machine(option), [0, 0, 0.0, 0.0, option.replicas_per_instance])
            entry[0 if option.is_spot else 1] += counts[k]
            entry[2] += class_load(option, fleet.routed[h][k])
            entry[3] = max(entry[3], reclaim_probability(option, interval))
        kept, needed = 1.0, 0
        for spot, on_demand, load, p, per_instance in machines.values():
            need = math.ceil(load / per_instance - 1e-9)
            needed += need * int(per_instance)
            kept *= kept_probability(int(spot), int(spot + on_demand) - need, p)
        largest_spot = max(
            (o.replicas_per_instance for k, o in enumerate(fleet.options) if o.is_spot and counts[k]),
            default=0,
        )
        replicas = fleet.replicas(h)
        out.append(IntervalSurvival(replicas, needed, replicas - largest_spot, kept,
                                    fleet.instances_on(h, spot=False)))  # fmt: skip
    return tuple(out)
