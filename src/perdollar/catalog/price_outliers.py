"""Prices far outside their family's range, flagged as stale ones are (kept, ranked, but marked).

A source's placeholder (GCP lists some TPU spot prices as $700/h for every size in a region) or a
typo ranks like any other price unless something says it is implausible. Two checks, both against
the catalog itself:

* the price against the median of the same instance type in the same market across regions: more
  than ``OUTLIER_FACTOR`` times above or below it;
* the price per accelerator-hour against the median of the same accelerator in the same market
  across every region and size: more than ``FAMILY_FACTOR`` times (sizes differ in host CPUs and
  memory, so the family's range is wider than a machine's);
* a spot price above the same machine's on-demand price in the same region (spot is a discount).

A spot price less than half the same machine's median spot price across regions is marked
:data:`SPOT_BELOW_PEERS_FLAG`: one zone's capture, at the cheapest zone, can sit far below what
the market usually asks (p5.48xlarge spot in eu-north-1 at 0.45× its regions' median, TPU v6e in
us-central1 at 0.40×), and ranking on it promises a price few runs will see.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Mapping

from perdollar.catalog.model import InstanceType, Offer

PRICE_OUTLIER_FLAG = "price-outlier"
PRICE_OUTLIER_MEANING = (
    "The price is more than 3x above or below the same machine's median across regions (or 10x from "
    "its accelerator's median price per accelerator-hour), or a spot price is above on-demand in the "
    "same region: probably a placeholder or an error in the source; check it before trusting it."
)
# Said under a recommendation whose top choice carries the flag, as a stale price's age is.
OUTLIER_SENTENCE = (
    "Its price is flagged price-outlier or spot-far-below-peers: far outside the same machine's or "
    "accelerator's prices elsewhere (`perdollar catalog flags`); confirm it with the provider before "
    "relying on this choice."
)
SPOT_BELOW_PEERS_FLAG = "spot-far-below-peers"
SPOT_BELOW_PEERS_MEANING = (
    "The spot price is less than half the same machine's median spot price across regions: one capture "
    "at the cheapest zone, rarely what a run pays. Ranked after the other prices; confirm it before relying "
    "on it."
)
# Flags whose prices every answer ranks after the plausible ones.
IMPLAUSIBLE_PRICE_FLAGS = (PRICE_OUTLIER_FLAG, SPOT_BELOW_PEERS_FLAG)
SPOT_PEER_FACTOR = 2.0
OUTLIER_FACTOR = 3.0
FAMILY_FACTOR = 10.0
MIN_GROUP = 4  # fewer prices than this say nothing about a family's range


def _far(value: float, median: float, factor: float) -> bool:
    return value > factor * median or value * factor < median


def _medians(items: Iterable[tuple[object, float] | None]) -> dict[object, float]:
    groups: dict[object, list[float]] = {}
    for item in items:
        if item is not None:
            groups.setdefault(item[0], []).append(item[1])
    return {key: statistics.median(values) for key, values in groups.items() if len(values) >= MIN_GROUP}


def _per_accelerator(offer: Offer, machine: InstanceType | None) -> tuple[tuple[str, str], float] | None:
    if machine is None or not machine.accelerator_key or machine.accelerator_count <= 0:
        return None
    if offer.price_per_hour <= 0:
        return None
    return (machine.accelerator_key, offer.market), offer.price_per_hour / machine.accelerator_count


def price_outliers(
    offers: Iterable[Offer], instance_types: Mapping[tuple[str, str], InstanceType]
) -> set[int]:
    """Positions (in ``offers``) of the prices far outside their family's range."""
    listed = list(offers)
    keyed = [_per_accelerator(o, instance_types.get((o.cloud, o.instance_type))) for o in listed]
    family = _medians(keyed)
    machine = _medians(((o.cloud, o.instance_type, o.market), o.price_per_hour) for o in listed
                       if o.price_per_hour > 0)  # fmt: skip
    on_demand = {(o.cloud, o.instance_type, o.region): o.price_per_hour
                 for o in listed if o.market == "on-demand" and o.price_per_hour > 0}  # fmt: skip
    flagged: set[int] = set()
    for index, (offer, item) in enumerate(zip(listed, keyed, strict=True)):
        if item is not None and item[0] in family and _far(item[1], family[item[0]], FAMILY_FACTOR):
            flagged.add(index)
        same = machine.get((offer.cloud, offer.instance_type, offer.market))
        if same is not None and offer.price_per_hour > 0 and _far(offer.price_per_hour, same, OUTLIER_FACTOR):
            flagged.add(index)
        if offer.market == "spot":
            regular = on_demand.get((offer.cloud, offer.instance_type, offer.region))
            if regular is not None and offer.price_per_hour > regular * 1.001:
                flagged.add(index)
    return flagged


def spot_below_peers(offers: Iterable[Offer]) -> set[int]:
    """Positions (in ``offers``) of the spot prices far below the same machine's other regions'."""
    listed = list(offers)
    medians = _medians(((o.cloud, o.instance_type), o.price_per_hour) for o in listed
                       if o.market == "spot" and o.price_per_hour > 0)  # fmt: skip
    return {
        index
        for index, offer in enumerate(listed)
        if offer.market == "spot"
        and 0 < offer.price_per_hour * SPOT_PEER_FACTOR < medians.get((offer.cloud, offer.instance_type), 0.0)
    }


def with_outlier_flags(
    offers: Iterable[Offer], instance_types: Mapping[tuple[str, str], InstanceType]
) -> list[Offer]:
    """``offers`` with :data:`PRICE_OUTLIER_FLAG` on exactly those :func:`price_outliers` finds and
    :data:`SPOT_BELOW_PEERS_FLAG` on those :func:`spot_below_peers` finds (recomputed on every
    load: a flag written into an older snapshot is not kept blindly)."""
    cleaned = [
        dataclasses.replace(o, flags=tuple(f for f in o.flags if f not in IMPLAUSIBLE_PRICE_FLAGS))
        if any(f in IMPLAUSIBLE_PRICE_FLAGS for f in o.flags)
        else o
        for o in offers
    ]
    outliers = price_outliers(cleaned, instance_types)
    below = spot_below_peers(cleaned)
    return [
        dataclasses.replace(
            o,
            flags=(
                *o.flags,
                *((PRICE_OUTLIER_FLAG,) if i in outliers else ()),
                *((SPOT_BELOW_PEERS_FLAG,) if i in below else ()),
            ),
        )
        if i in outliers or i in below
        else o
        for i, o in enumerate(cleaned)
    ]
