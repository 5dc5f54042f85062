"""Serving near the users (``--near``): the offers in regions within a round trip of the users'
places, and the notes that say which regions were kept and how far the chosen one is."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from perdollar.catalog.region_places import (
    DEFAULT_NEAR_RTT_MS,
    Place,
    places_of,
    region_locations,
    round_trips,
)
from perdollar.errors import PerdollarError
from perdollar.question import NearSettings, Question

# Kept regions named in the note before "and N more".
_NAMED_REGIONS = 12


@dataclass(frozen=True)
class Nearness:
    places: tuple[Place, ...]
    rtt_ms: float  # the longest round trip kept
    kept: dict[tuple[str, str], tuple[float, Place]]  # (cloud, region) → round trip, nearest place

    @property
    def where(self) -> str:
        return " or ".join(p.label for p in self.places)

    def round_trip(self, cloud: str, region: str) -> float | None:
        found = self.kept.get((cloud, region))
        return found[0] if found else None


def nearness(settings: NearSettings) -> Nearness | None:
    """The places asked for and the regions within the round trip; None without ``--near``."""
    if not settings.places:
        if settings.rtt_ms is not None:
            raise PerdollarError("--near-rtt-ms bounds the round trip to --near", "add --near REGION")
        return None
    rtt = DEFAULT_NEAR_RTT_MS if settings.rtt_ms is None else settings.rtt_ms
    if not rtt > 0:
        raise PerdollarError(f"--near-rtt-ms {rtt:g} keeps no region", "give a round trip above 0, e.g. 30")
    places = places_of(settings.places)
    kept = {key: found for key, found in round_trips(places).items() if found[0] <= rtt}
    return Nearness(places, rtt, kept)


def near_offers(offers: pd.DataFrame, question: Question) -> pd.DataFrame:
    """``offers`` in regions near the question's users (all of them without ``--near``); a place
    with no priced region within the round trip is refused, naming the nearest one."""
    near = nearness(question.near)
    if near is None or offers.empty:
        return offers
    keys = list(zip(offers["cloud"].astype(str), offers["region"].astype(str), strict=True))
    inside = pd.Series([key in near.kept for key in keys], index=offers.index, dtype=bool)
    if not inside.any():
        every = round_trips(near.places)
        priced = {key for key in keys if key in every}
        if priced:
            nearest = min(priced, key=lambda key: every[key][0])
            ms = every[nearest][0]
            raise PerdollarError(
                f"no priced region is within {near.rtt_ms:g} ms of {near.where}: the nearest, "
                f"{nearest[0]} {nearest[1]}, is about {ms:.0f} ms away",
                f"raise --near-rtt-ms to {ms + 1:.0f}, or name another --near place",
            )
        raise PerdollarError(
            f"none of the offers asked for has a known place to measure from {near.where}",
            "drop --near, or allow the clouds whose regions are listed (aws, gcp, azure)",
        )
    return offers[inside]


def near_notes(
    question: Question, offers: pd.DataFrame, chosen: tuple[str, str] | None, catalog_offers: pd.DataFrame
) -> tuple[str, ...]:
    """Which regions ``--near`` kept (those with an ``offers`` row), the clouds of the catalog's
    offers that state no region, and the round trip to the chosen region."""
    near = nearness(question.near)
    if near is None:
        return ()
    offered = {(str(c), str(r)) for c, r in zip(offers["cloud"], offers["region"], strict=True)}
    every = region_locations()
    with_offers = sorted(offered & set(near.kept), key=lambda key: (near.kept[key][0], key))
    named = [f"{cloud} {region} {near.kept[(cloud, region)][0]:.0f} ms" for cloud, region in with_offers]
    more = len(named) - _NAMED_REGIONS
    listed = ", ".join(named[:_NAMED_REGIONS]) + (f" and {more} more" if more > 0 else "")
    asked = {c.lower() for c in question.clouds}
    pairs = zip(catalog_offers["cloud"].astype(str), catalog_offers["region"].astype(str), strict=True)
    placeless = sorted({c for c, r in pairs if (c, r) not in every and (not asked or c.lower() in asked)})
    unplaced = (
        f"; {', '.join(placeless)} state no region, so none of their offers is kept" if placeless else ""
    )
    notes = [
        f"near {near.where}: {len(named)} region(s) within an estimated {near.rtt_ms:g} ms round trip "
        f"kept ({listed}); estimated from the great-circle distance at 200 km/ms in fibre × 2.1 for "
        f"the route (give --near-rtt-ms for another bound){unplaced}"
    ]
    if chosen is not None and chosen in near.kept:
        ms, place = near.kept[chosen]
        notes.append(f"the chosen region, {chosen[0]} {chosen[1]}, is about {ms:.0f} ms from {place.label}")
    return tuple(notes)


def chosen_region(frame: pd.DataFrame) -> tuple[str, str] | None:
    """The (cloud, region) of a ranked frame's top feasible deployment."""
    feasible = frame[frame["feasible"].astype(bool)] if "feasible" in frame else frame
    if feasible.empty:
        return None
    top = feasible.iloc[0]
    return str(top["cloud"]), str(top["region"])
