"""Catalog snapshots as the store keeps them: one compact price row per offer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from perdollar.jsonable import JsonObject, JsonValue

if TYPE_CHECKING:
    from perdollar.catalog import Catalog

OFFER_FIELDS = ("cloud", "instance_type", "region", "market", "price_per_hour")


def offers_of(catalog: Catalog) -> list[dict[str, object]]:
    """The catalog's offers as ``{cloud, instance_type, region, market, price_per_hour}`` rows."""
    return [{name: getattr(offer, name) for name in OFFER_FIELDS} for offer in catalog.offers]


def price_index(
    offers: Sequence[Mapping[str, object]],
) -> dict[tuple[str, str, str, str], float]:
    """(cloud, instance_type, region, market) → price per hour of one node."""
    return {
        (str(o["cloud"]), str(o["instance_type"]), str(o["region"]), str(o["market"])): _price(o)
        for o in offers
        if o.get("price_per_hour") is not None
    }


def _price(offer: Mapping[str, object]) -> float:
    price = offer["price_per_hour"]
    if not isinstance(price, int | float | str):
        raise TypeError(f"price_per_hour is {type(price).__name__}, not a number")
    return float(price)


def offers_from_payload(document: JsonValue) -> tuple[JsonObject, ...]:
    """A stored snapshot's offers: a list of objects, else the row is damaged."""
    if not isinstance(document, list):
        raise TypeError(f"the snapshot is {type(document).__name__}, not a list of offers")
    offers = tuple(offer for offer in document if isinstance(offer, dict))
    if len(offers) != len(document):
        raise TypeError("the snapshot holds an offer that is not an object")
    return offers
