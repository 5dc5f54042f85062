"""What changed between a stored recommendation and the same question asked again today."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from perdollar.fmt import format_money
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation

PRICE_MOVE_NOTED = 0.01  # relative price change worth a sentence
RATE_MOVE_NOTED = 0.05  # relative throughput change worth a sentence
OfferKey = tuple[str, str, str, str]  # cloud, instance type, region, market


@dataclass(frozen=True, slots=True)
class Reevaluation:
    flipped: bool
    old_top: str | None  # label of the stored top choice
    new_top: str | None
    old_captured_at: str
    new_captured_at: str
    reasons: tuple[str, ...]  # why, most important first
    price_moves: tuple[str, ...]  # the largest price moves among the candidates, for context
    summary: str


def _key(estimate: Estimate) -> tuple[str, str, str, str, int]:
    return (estimate.cloud, estimate.instance_type, estimate.region, estimate.market, estimate.nodes)


def _top(recommendation: Recommendation) -> Estimate | None:
    return next((e for e in recommendation.estimates if e.feasible), None)


def _date(iso: str) -> str:
    return iso[:10] if iso else "the stored snapshot"


def _node_price(estimate: Estimate) -> float:
    return estimate.price_per_hour / max(estimate.nodes, 1)


def _price_sentence(name: str, market: str, old: float, new: float, since: str) -> str | None:
    if not (old > 0 and new > 0) or abs(new / old - 1) < PRICE_MOVE_NOTED:
        return None
    change = new / old - 1
    verb = "rose" if change > 0 else "fell"
    return (
        f"{name} {market} price {verb} {abs(change):.0%} since {since} "
        f"({format_money(old)}/h → {format_money(new)}/h)"
    )


def _rate_sentence(old: Estimate, new: Estimate) -> str | None:
    if not (old.samples_per_second > 0 and new.samples_per_second > 0):
        return None
    change = new.samples_per_second / old.samples_per_second - 1
    if old.basis == new.basis and abs(change) < RATE_MOVE_NOTED:
        return None
    basis = f" ({old.basis} → {new.basis})" if old.basis != new.basis else ""
    return (
        f"{new.instance_type} throughput {'up' if change > 0 else 'down'} {abs(change):.0%}{basis}: "
        f"{old.samples_per_second:,.4g} → {new.samples_per_second:,.4g} samples/s"
    )


def _estimate_changes(old: Estimate | None, new: Estimate | None, since: str) -> list[str]:
    if old is None or new is None:
        return []
    price = _price_sentence(new.instance_type, new.market, _node_price(old), _node_price(new), since)
    return [s for s in (price, _rate_sentence(old, new)) if s]


def compare(
    old: Recommendation, new: Recommendation, old_prices: Mapping[OfferKey, float] | None = None
) -> Reevaluation:
    """Compare the stored answer with today's; ``old_prices`` (from the stored catalog
    snapshot) adds price moves of offers the old answer did not rank."""
    since = _date(old.catalog_captured_at)
    old_top, new_top = _top(old), _top(new)
    old_by_key = {_key(e): e for e in old.estimates}
    new_by_key = {_key(e): e for e in new.estimates}
    flipped = (old_top is None) != (new_top is None) or (
        old_top is not None and new_top is not None and _key(old_top) != _key(new_top)
    )

    reasons: list[str] = []
    if old_top is not None:
        today = new_by_key.get(_key(old_top))
        if today is None:
            reasons.append(f"{old_top.label} is no longer offered in the catalog")
        elif not today.feasible:
            reasons.append(f"{old_top.label} is now excluded: {today.excluded_reason}")
        reasons += _estimate_changes(old_top, today, since)
    if flipped and new_top is not None:
        before = old_by_key.get(_key(new_top))
        if before is None:
            reasons.append(f"{new_top.label} was not a candidate on {since}")
        elif not before.feasible:
            reasons.append(f"{new_top.label} was excluded on {since} ({before.excluded_reason})")
        reasons += _estimate_changes(before, new_top, since)
        if (
            old_top is not None
            and old_top.samples_per_dollar > 0
            and math.isfinite(new_top.samples_per_dollar)
        ):
            ratio = new_top.samples_per_dollar / old_top.samples_per_dollar
            reasons.append(
                f"{new_top.instance_type} {new_top.market} now gives {ratio:.2g}× the samples per "
                f"dollar that {old_top.instance_type} {old_top.market} gave on {since}"
            )

    moves = [m for m in _largest_price_moves(old, new, old_prices, since) if m not in reasons]
    if flipped:
        summary = (
            f"top choice flipped: {old_top.label if old_top else 'nothing feasible'} → "
            f"{new_top.label if new_top else 'nothing feasible'}"
        )
    else:
        summary = f"top choice unchanged: {new_top.label if new_top else 'nothing feasible'}"
    return Reevaluation(
        flipped,
        old_top.label if old_top else None,
        new_top.label if new_top else None,
        old.catalog_captured_at,
        new.catalog_captured_at,
        tuple(dict.fromkeys(reasons)),
        tuple(moves),
        summary,
    )


def _largest_price_moves(
    old: Recommendation,
    new: Recommendation,
    old_prices: Mapping[OfferKey, float] | None,
    since: str,
    limit: int = 3,
) -> list[str]:
    before: dict[OfferKey, float] = dict(old_prices or {})
    for estimate in old.estimates:
        before.setdefault(_key(estimate)[:4], _node_price(estimate))
    moves: list[tuple[float, str]] = []
    seen: set[tuple[str, str]] = set()
    for estimate in new.estimates:
        key: OfferKey = _key(estimate)[:4]
        old_price, new_price = before.get(key), _node_price(estimate)
        if old_price is None or (estimate.instance_type, estimate.market) in seen:
            continue
        sentence = _price_sentence(estimate.instance_type, estimate.market, old_price, new_price, since)
        if sentence:
            seen.add((estimate.instance_type, estimate.market))
            moves.append((abs(math.log(new_price / old_price)), sentence))
    moves.sort(key=lambda item: item[0], reverse=True)
    return [sentence for _, sentence in moves[:limit]]
