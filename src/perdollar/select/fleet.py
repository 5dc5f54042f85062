"""Choosing a fleet for a day of traffic: the static-peak baseline, one type autoscaled, a mix.

The integer program over a mix is solved on a short list of candidates: those cheapest per
request of the day's mix and those cheapest per request of each class alone (a machine cheap
for long prompts may be dear for short ones). ``benchmarks/fleet_over_a_day.py`` measures what
the short list gives up against the program over every candidate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perdollar.price.fleet import (
    Fleet,
    FleetOption,
    FleetPolicy,
    class_load,
    mixed_fleet,
    single_type_fleet,
    spot_terms,
)

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
    terms = spot_terms(option, interval_s, policy.availability)
    load = class_load(option, shares)  # replicas per request/s of the mix
    usable = option.replicas_per_instance * terms.capacity_share
    return terms.price_per_hour * load / usable if math.isfinite(load) else math.inf


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
    """The three fleets, or None when no candidate serves every class."""
    statics = [f for o in options if (f := single_type_fleet(o, rates, durations, policy, static=True))]
    scaled = [f for o in options if (f := single_type_fleet(o, rates, durations, policy, static=False))]
    if not statics or not scaled:
        return None
    static_peak = min(statics, key=lambda f: f.cost)
    autoscaled = min(scaled, key=lambda f: f.cost)
    totals = [sum(r[c] * d for r, d in zip(rates, durations, strict=True)) for c in range(len(rates[0]))]
    mix = [t / sum(totals) for t in totals]
    listed = short_list(options, mix, max(durations), policy)
    if autoscaled.options[0] not in listed:
        listed.append(autoscaled.options[0])
    mixed = mixed_fleet(listed, rates, durations, policy)
    if mixed is None or mixed.cost > autoscaled.cost:
        mixed = autoscaled
    return FleetChoice(static_peak, autoscaled, mixed, len(options), len(listed))
