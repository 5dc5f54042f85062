"""A serving fleet over a day: instances per interval, autoscaled, spot with on-demand behind.

Each candidate (an offer × tensor-parallel degree × format) brings the request rate one replica
takes within the SLOs for each request class (from the capacity model of the prediction stage).
An interval's load on a candidate is Σ_c rate_c / capacity_c replicas. Three fleets are priced:

* **static peak**: one instance type provisioned for the busiest interval all day, at the same
  target utilisation and spot rules as the autoscaled fleets;
* **autoscaled, one type**: instances follow the load at a target utilisation, never below the
  minimum replicas; scale-ups are started one scale-up delay (instance start + model load) ahead
  of the interval that needs them, as the curve is known, and billed from their start;
* **mixed**: several instance types at once, chosen by an integer program
  (:func:`mixed_fleet`, ``scipy.optimize.milp``) that also routes each class of requests.

Spot: an instance's monthly interruption share becomes an hourly hazard λ
(:func:`perdollar.price.spot.monthly_fraction_to_hazard`). Reclaims come in waves that take the
upper edge ``w`` of the share at once (5 % for a ``<5%`` pool, 50 % where nothing is published),
so waves strike a pool at λ/w per hour. When a wave is likelier in an interval than the
availability target allows to be missed, a spot instance counts for only ``1 − w`` of its
capacity (the fleet survives the wave); otherwise for all of it (the few seconds to the
fallback are within the misses allowed). Lost instances are replaced by on-demand instances of
the same type for the rest of the interval (half of it on average): that expected fallback is
added to a spot instance's hourly price.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perdollar.catalog.quotas import Quota
from perdollar.price.fleet_limits import quota_groups, within_quotas
from perdollar.price.spot import BUCKET_MONTHLY_FRACTION, UNKNOWN_MONTHLY_FRACTION, monthly_fraction_to_hazard

SECONDS_PER_HOUR = 3600.0
DAYS_PER_MONTH = 30.0
DEFAULT_TARGET_UTILISATION = 0.8
MIN_TARGET_UTILISATION = 0.05  # below it the autoscaler keeps twenty replicas for one's load
DEFAULT_MIN_REPLICAS = 1
DEFAULT_AVAILABILITY = 0.999
_MILP_GAP = 0.005
# A safety net, not a setting of the answer: the whole catalog's day is solved within the gap at
# the program's root node in about 10 s on two busy cores, and a limit reached would make the
# fleet depend on how busy the machine was.
_MILP_SECONDS = 90.0


@dataclass(frozen=True, slots=True)
class FleetPolicy:
    target_utilisation: float = DEFAULT_TARGET_UTILISATION
    min_replicas: int = DEFAULT_MIN_REPLICAS
    availability: float = DEFAULT_AVAILABILITY  # share of intervals that must keep their capacity
    by_carbon: bool = False  # choose the fleet that emits least (ties by cost), not the cheapest
    quotas: tuple[Quota, ...] = ()  # GPU quotas every interval's instances stay within


@dataclass(frozen=True, slots=True)
class FleetOption:
    """One priced way to run replicas: an offer with a degree and format."""

    label: str  # "g6e.xlarge spot (aws us-east-1) tp1+fp8"
    instance_type: str
    market: str
    price_per_hour: float
    replicas_per_instance: int
    class_capacity: tuple[float, ...]  # requests/s one replica takes within the SLOs, per class
    scale_up_s: float  # instance start + model load
    interruption_bucket: str = ""
    fallback_price_per_hour: float = math.nan  # on-demand price of the same type (spot only)
    # What the replica is, for replaying it: chip, degree, format, engine and KV-cache precision.
    accelerator_key: str = ""
    tensor_parallel: int = 1
    precision: str = ""
    engine: str = ""
    kv_precision: str = ""
    # Where it runs and what it draws on: the quota of its family there, and what an hour emits.
    cloud: str = ""
    region: str = ""
    gpus_per_instance: int = 0
    co2e_g_per_hour: float = math.nan
    captured_at: str = ""  # the date of the price it is billed at

    @property
    def is_spot(self) -> bool:
        return self.market == "spot"


@dataclass(frozen=True, slots=True)
class SpotTerms:
    capacity_share: float  # of a spot instance's capacity counted on
    price_per_hour: float  # its price plus the expected on-demand fallback
    wave_probability: float  # that a reclaim wave strikes the pool within an interval


def spot_terms(option: FleetOption, interval_s: float, availability: float) -> SpotTerms:
    """What a spot instance is worth under the wave model (see the module docstring)."""
    if not option.is_spot:
        return SpotTerms(1.0, option.price_per_hour, 0.0)
    central, _, high = BUCKET_MONTHLY_FRACTION.get(option.interruption_bucket, UNKNOWN_MONTHLY_FRACTION)
    hazard = float(monthly_fraction_to_hazard(central))
    wave = 1.0 - math.exp(-hazard / high * interval_s / SECONDS_PER_HOUR)
    fallback = option.fallback_price_per_hour
    fallback = option.price_per_hour if not math.isfinite(fallback) else fallback
    price = option.price_per_hour + hazard * 0.5 * (interval_s / SECONDS_PER_HOUR) * fallback
    share = 1.0 - high if wave > 1.0 - availability else 1.0
    return SpotTerms(share, price, wave)


@dataclass(frozen=True, slots=True)
class Fleet:
    """Instances of each option in each interval, what they cost and whom they serve."""

    name: str
    options: tuple[FleetOption, ...]
    instances: tuple[tuple[int, ...], ...]  # [interval][option]
    routed: tuple[tuple[tuple[float, ...], ...], ...]  # [interval][option][class] requests/s
    cost_per_interval: tuple[float, ...]  # USD over the interval, scale-up lead included
    lower_bound: float = math.nan  # the integer program's proof: no fleet of its options costs less

    @property
    def cost(self) -> float:
        return sum(self.cost_per_interval)

    def replicas(self, interval: int) -> int:
        return sum(
            n * o.replicas_per_instance for n, o in zip(self.instances[interval], self.options, strict=True)
        )

    def instances_on(self, interval: int, *, spot: bool) -> int:
        return sum(
            n for n, o in zip(self.instances[interval], self.options, strict=True) if o.is_spot == spot
        )

    def spot_share(self, durations: Sequence[float]) -> float:
        """Of the instance-hours, those on spot."""
        total = spot = 0.0
        for counts, duration in zip(self.instances, durations, strict=True):
            for n, option in zip(counts, self.options, strict=True):
                total += n * duration
                spot += n * duration if option.is_spot else 0.0
        return spot / total if total else 0.0

    def composition(self, interval: int) -> str:
        """ "3× g6e.xlarge spot + 1× p5.48xlarge on-demand" for one interval."""
        parts = [
            f"{n}× {o.instance_type} {o.market}"
            for n, o in zip(self.instances[interval], self.options, strict=True)
            if n
        ]
        return " + ".join(parts) or "none"


def class_load(option: FleetOption, rates: Sequence[float]) -> float:
    """Replicas of ``option`` the class ``rates`` keep busy at SLO capacity (inf: a class it cannot run)."""
    load = 0.0
    for rate, capacity in zip(rates, option.class_capacity, strict=True):
        if rate > 0:
            load += rate / capacity if capacity > 0 else math.inf
    return load


def _lead_cost(option: FleetOption, before: int, after: int) -> float:
    """Instances started one scale-up delay early are billed from their start."""
    return max(0, after - before) * option.price_per_hour * option.scale_up_s / SECONDS_PER_HOUR


def single_type_fleet(
    option: FleetOption, rates: Sequence[Sequence[float]], durations: Sequence[float], policy: FleetPolicy,
    *, static: bool,
) -> Fleet | None:  # fmt: skip
    """One option alone, autoscaled or provisioned for the peak; None where it cannot serve a class."""
    interval = max(durations)
    terms = spot_terms(option, interval, policy.availability)
    loads = [class_load(option, r) for r in rates]
    if not all(math.isfinite(load) for load in loads):
        return None
    floor = math.ceil(policy.min_replicas / option.replicas_per_instance)
    # The static fleet keeps the same headroom at its peak as the autoscaled one: the headroom
    # guards against the curve being wrong, and a static fleet sized from the same curve is as
    # exposed at its busiest hour.
    usable = option.replicas_per_instance * terms.capacity_share * policy.target_utilisation
    counts = [max(floor, math.ceil(load / usable - 1e-9)) for load in loads]
    if static:
        counts = [max(counts)] * len(loads)
    groups = quota_groups([option], policy.quotas)
    if not all(within_quotas([option], [n], groups) for n in counts):
        return None  # its family's quota cannot hold it at the busiest interval
    costs = [
        n * terms.price_per_hour * d / SECONDS_PER_HOUR + _lead_cost(option, counts[i - 1], n)
        for i, (n, d) in enumerate(zip(counts, durations, strict=True))
    ]
    routed = tuple((tuple(r),) for r in rates)
    return Fleet(
        f"{'static peak' if static else 'autoscaled'}: {option.label}", (option,),
        tuple((n,) for n in counts), routed, tuple(costs),
    )  # fmt: skip


def mixed_fleet(
    options: Sequence[FleetOption], rates: Sequence[Sequence[float]], durations: Sequence[float],
    policy: FleetPolicy, *, time_limit_s: float = _MILP_SECONDS,
) -> Fleet | None:  # fmt: skip
    """The cheapest autoscaled fleet of any mix of ``options``, as a mixed-integer program.

    Variables per interval h and option k: instances x (integer), scale-ups z ≥ x_h − x_{h−1}
    (the day wraps round), and the requests/s y of each class routed to k. Every class is served
    (Σ_k y = rate), no option beyond its usable capacity (Σ_c y_c / capacity_c ≤ x · replicas per
    instance · target utilisation · spot capacity share), at least the minimum replicas, every
    quota's family within its GPUs (Σ_k∈family x · GPUs ≤ quota), and the cost is the
    instance-hours plus the scale-ups' lead time. By carbon, the program first finds the least
    emissions, then the cheapest fleet within its gap of them. None when nothing is feasible.
    """
    hours, kinds = len(rates), len(options)
    classes = len(rates[0]) if rates else 0
    if not kinds or not hours:
        return None
    interval = max(durations)
    terms = [spot_terms(o, interval, policy.availability) for o in options]
    x_at = lambda h, k: h * kinds + k  # noqa: E731
    z_at = lambda h, k: hours * kinds + h * kinds + k  # noqa: E731
    y_at = lambda h, k, c: 2 * hours * kinds + (h * kinds + k) * classes + c  # noqa: E731
    size = 2 * hours * kinds + hours * kinds * classes
    cost = np.zeros(size)
    upper = np.full(size, np.inf)
    for h in range(hours):
        for k, option in enumerate(options):
            cost[x_at(h, k)] = terms[k].price_per_hour * durations[h] / SECONDS_PER_HOUR
            cost[z_at(h, k)] = option.price_per_hour * option.scale_up_s / SECONDS_PER_HOUR
            for c in range(classes):
                if option.class_capacity[c] <= 0:
                    upper[y_at(h, k, c)] = 0.0
    # SciPy's solver is imported here, not with the module: the fleet options are registered with
    # every command, and loading scipy.optimize costs about a second on a small machine.
    from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp
    from scipy.sparse import lil_matrix

    groups = quota_groups(options, policy.quotas)
    rows = hours * (classes + kinds * 2 + 1 + len(groups)) + (1 if policy.by_carbon else 0)
    matrix = lil_matrix((rows, size))
    low, high = np.zeros(rows), np.zeros(rows)
    row = 0
    for h in range(hours):
        for c in range(classes):  # every class served
            for k in range(kinds):
                matrix[row, y_at(h, k, c)] = 1.0
            low[row] = high[row] = rates[h][c]
            row += 1
        for k, option in enumerate(options):  # capacity
            for c in range(classes):
                if option.class_capacity[c] > 0:
                    matrix[row, y_at(h, k, c)] = 1.0 / option.class_capacity[c]
            usable = option.replicas_per_instance * policy.target_utilisation * terms[k].capacity_share
            matrix[row, x_at(h, k)] = -usable
            low[row], high[row] = -np.inf, 0.0
            row += 1
            # scale-ups: z_h − x_h + x_{h−1} ≥ 0
            matrix[row, z_at(h, k)] = 1.0
            matrix[row, x_at(h, k)] -= 1.0
            matrix[row, x_at((h - 1) % hours, k)] += 1.0
            low[row], high[row] = 0.0 if hours > 1 else -np.inf, np.inf
            row += 1
        for k, option in enumerate(options):  # minimum replicas
            matrix[row, x_at(h, k)] = option.replicas_per_instance
        low[row], high[row] = policy.min_replicas, np.inf
        row += 1
        for group in groups:  # quotas
            for k in group.members:
                matrix[row, x_at(h, k)] = options[k].gpus_per_instance
            low[row], high[row] = -np.inf, group.gpus
            row += 1
    integrality = np.zeros(size)
    integrality[: hours * kinds] = 1

    def solve(objective: np.ndarray) -> OptimizeResult:
        return milp(
            objective, constraints=LinearConstraint(matrix.tocsr(), low, high), integrality=integrality,
            bounds=Bounds(np.zeros(size), upper),
            options={"time_limit": time_limit_s, "mip_rel_gap": _MILP_GAP, "disp": False},
        )  # fmt: skip

    if policy.by_carbon:
        emitted = np.zeros(size)
        for h in range(hours):
            for k, option in enumerate(options):
                emitted[x_at(h, k)] = option.co2e_g_per_hour * durations[h] / SECONDS_PER_HOUR
                emitted[z_at(h, k)] = option.co2e_g_per_hour * option.scale_up_s / SECONDS_PER_HOUR
        least = solve(emitted)
        if least.x is None:
            return None
        for column in np.flatnonzero(emitted):  # then the cheapest within the program's gap of it
            matrix[row, column] = emitted[column]
        low[row], high[row] = -np.inf, float(least.fun) * (1 + _MILP_GAP)
    result = solve(cost)
    if result.x is None:
        return None
    solution = result.x
    counts = [[round(solution[x_at(h, k)]) for k in range(kinds)] for h in range(hours)]
    used = [k for k in range(kinds) if any(counts[h][k] for h in range(hours))]
    routed = tuple(
        tuple(tuple(max(0.0, float(solution[y_at(h, k, c)])) for c in range(classes)) for k in used)
        for h in range(hours)
    )
    chosen = tuple(options[k] for k in used)
    instances = tuple(tuple(counts[h][k] for k in used) for h in range(hours))
    return Fleet(
        "mixed", chosen, instances, routed, interval_costs(chosen, instances, durations, policy),
        float(getattr(result, "mip_dual_bound", math.nan)),
    )  # fmt: skip


def interval_costs(
    options: Sequence[FleetOption], instances: Sequence[Sequence[int]], durations: Sequence[float],
    policy: FleetPolicy,
) -> tuple[float, ...]:  # fmt: skip
    """USD of each interval: instance-hours at the spot terms, plus the lead of each scale-up (the
    day wraps round: the first interval scales up from the last)."""
    terms = [spot_terms(o, max(durations), policy.availability) for o in options]
    hours = len(instances)
    return tuple(
        sum(
            instances[h][k] * terms[k].price_per_hour * durations[h] / SECONDS_PER_HOUR
            + _lead_cost(option, instances[(h - 1) % hours][k], instances[h][k])
            for k, option in enumerate(options)
        )
        for h in range(hours)
    )


def with_added_instances(
    fleet: Fleet, added: Sequence[Sequence[int]], durations: Sequence[float], policy: FleetPolicy
) -> Fleet:
    """``fleet`` with ``added[h][k]`` more instances of option k in interval h, routed as before
    (the same rates spread over more replicas) and costed again."""
    instances = tuple(
        tuple(n + extra for n, extra in zip(row, more, strict=True))
        for row, more in zip(fleet.instances, added, strict=True)
    )
    costs = interval_costs(fleet.options, instances, durations, policy)
    return replace(fleet, instances=instances, cost_per_interval=costs)


def month_cost(fleet: Fleet, span_s: float) -> float:
    """USD a month: the fleet's cost over the curve, scaled to 30 days."""
    return fleet.cost * DAYS_PER_MONTH * 86_400.0 / span_s


def usd_per_million_tokens(fleet: Fleet, tokens_served: float) -> float:
    return fleet.cost / tokens_served * 1e6 if tokens_served > 0 else math.nan
