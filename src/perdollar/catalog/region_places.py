"""Where each priced region is (``region_locations.csv``), and how long a round trip takes from a
user's place to it, estimated from the distance.

A round trip is estimated from the great-circle distance: light in silica fibre covers about
200 km a millisecond (refractive index about 1.47), and Internet paths run longer than the line
of sight — Bozkurt et al., "Dissecting Latency in the Internet's Fiber Infrastructure"
(arXiv:1811.10737), give the rule of thumb measured latency ≈ line-of-sight distance × 2.1 at
the speed of light in fibre. An estimate, not a measurement: a user who has pinged the regions
knows better, and says so with ``--near-rtt-ms``.
"""

from __future__ import annotations

import csv
import difflib
import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path

from perdollar.errors import PerdollarError

REGION_LOCATIONS = Path(__file__).parent / "region_locations.csv"
FIBRE_KM_PER_MS = 200.0
ROUTE_FACTOR = 2.1
EARTH_RADIUS_KM = 6371.0
# About 1,400 km of line of sight at the route factor: a region in the user's part of a continent
# (us-east-1 keeps Ohio, Montreal and Chicago, not Iowa or Texas).
DEFAULT_NEAR_RTT_MS = 30.0


@dataclass(frozen=True, slots=True)
class RegionLocation:
    cloud: str
    region: str
    city: str
    latitude: float
    longitude: float


@dataclass(frozen=True, slots=True)
class Place:
    """A user's place as given to ``--near``: a region or a city, where it is."""

    given: str  # as written, "us-east-1"
    label: str  # "aws us-east-1 (Ashburn)" or "Frankfurt"
    latitude: float
    longitude: float


@functools.cache
def region_locations() -> dict[tuple[str, str], RegionLocation]:
    """(cloud, region) → where the region is."""
    with REGION_LOCATIONS.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return {
        (r["cloud"], r["region"]): RegionLocation(
            r["cloud"], r["region"], r["city"], float(r["latitude"]), float(r["longitude"])
        )
        for r in rows
    }


def great_circle_km(latitude_a: float, longitude_a: float, latitude_b: float, longitude_b: float) -> float:
    """The haversine distance between two points on a sphere of the Earth's mean radius."""
    phi_a, phi_b = math.radians(latitude_a), math.radians(latitude_b)
    d_phi, d_lambda = phi_b - phi_a, math.radians(longitude_b - longitude_a)
    h = math.sin(d_phi / 2) ** 2 + math.cos(phi_a) * math.cos(phi_b) * math.sin(d_lambda / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


def round_trip_ms(km: float) -> float:
    """The estimated round trip over ``km`` of line of sight (see the module docstring)."""
    return 2 * km * ROUTE_FACTOR / FIBRE_KM_PER_MS


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def resolve_place(text: str) -> Place:
    """``text`` as a place: a region of any cloud (``us-east-1``, ``aws:us-east-1``) or a city of
    the table (``frankfurt``, ``sao paulo``); anything else is refused with the nearest names."""
    locations = region_locations()
    given = text.strip()
    cloud, _, region = given.rpartition(":")
    found = [loc for loc in locations.values() if loc.region == region and (not cloud or loc.cloud == cloud)]
    if found:
        loc = found[0]
        return Place(given, f"{loc.cloud} {loc.region} ({loc.city})", loc.latitude, loc.longitude)
    cities = {_key(loc.city): loc for loc in locations.values()}
    if _key(given) in cities:
        loc = cities[_key(given)]
        return Place(given, loc.city, loc.latitude, loc.longitude)
    names = sorted(
        {loc.region for loc in locations.values()} | {loc.city.lower() for loc in locations.values()}
    )
    close = difflib.get_close_matches(given.lower(), names, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    raise PerdollarError(
        f"--near {given!r} is neither a priced region nor a city perdollar knows",
        f"{hint}give a region name (us-east-1, us-central1, eastus) or a city (frankfurt, tokyo)",
    )


def places_of(texts: tuple[str, ...]) -> tuple[Place, ...]:
    """Each place of ``--near`` (repeated, or comma lists), in the order given, once each."""
    parts = [part.strip() for text in texts for part in text.split(",") if part.strip()]
    return tuple({place.label: place for place in map(resolve_place, parts)}.values())


def round_trips(places: tuple[Place, ...]) -> dict[tuple[str, str], tuple[float, Place]]:
    """Every located region's estimated round trip to the nearest of ``places``, and that place."""
    out: dict[tuple[str, str], tuple[float, Place]] = {}
    for key, loc in region_locations().items():
        out[key] = min(
            (
                (round_trip_ms(great_circle_km(p.latitude, p.longitude, loc.latitude, loc.longitude)), p)
                for p in places
            ),
            key=lambda pair: pair[0],
        )
    return out
