"""Catalog snapshots as the store keeps them: one compact price row per offer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from perdollar.catalog import Catalog

OFFER_FIELDS = ("cloud", "instance_type", "region", "market", "price_per_hour")


def offers_of(catalog: Catalog) -> list[dict[str, Any]]:
    """The catalog's offers as ``{cloud, instance_type, region, market, price_per_hour}`` rows."""
    return [{name: getattr(offer, name) for name in OFFER_FIELDS} for offer in catalog.offers]


def price_index(
    offers: list[dict[str, Any]] | tuple[dict[str, Any], ...],
) -> dict[tuple[str, str, str, str], float]:
    """(cloud, instance_type, region, market) → price per hour of one node."""
    return {
        (o["cloud"], o["instance_type"], o["region"], o["market"]): float(o["price_per_hour"])
        for o in offers
        if o.get("price_per_hour") is not None
    }
