"""A snapshot's offers, read, checked and flagged once, then kept in the data directory.

Reading the offers checks every row and looks for price outliers across the whole table; a
process that asks a question pays that each time. The outcome is kept as JSON under
``catalog-offers/``, keyed by perdollar's version, a digest of the catalog's code and a digest of
the snapshot's own files, so an edited snapshot or reader never serves older offers. A kept file
that cannot be read back is read again from the snapshot and replaced.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from perdollar.catalog.model import Offer
from perdollar.files import installed_version, keep_json

_SCHEMA = 1
_FIELDS = 10  # an offer's row: cloud … flags (see _row)


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _path(folder: Path, files: Iterable[str]) -> Path | None:
    from perdollar.paths import data_dir

    digest = hashlib.sha256(f"{_SCHEMA}:{installed_version('perdollar')}:{_code_digest()}".encode())
    try:
        for name in files:
            digest.update(name.encode())
            digest.update((folder / name).read_bytes())
        return data_dir() / "catalog-offers" / f"{digest.hexdigest()[:24]}.json"
    except OSError:
        return None  # a file missing from the snapshot: the reader says which


def kept_offers(folder: Path, files: Iterable[str], read: Callable[[], list[Offer]]) -> list[Offer]:
    """The offers of the snapshot in ``folder`` (whose contents are ``files``): kept, or ``read()``."""
    path = _path(folder, files)
    if path is not None:
        kept = _load(path)
        if kept is not None:
            return kept
    offers = read()
    if path is not None:
        keep_json(path, [_row(offer) for offer in offers])
    return offers


def _row(offer: Offer) -> list[Any]:
    return [
        offer.cloud, offer.instance_type, offer.region, offer.market, offer.price_per_hour,
        offer.captured_at.isoformat(), offer.price_max_per_hour, offer.price_basis,
        offer.interruption_bucket, list(offer.flags),
    ]  # fmt: skip


def _load(path: Path) -> list[Offer] | None:
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
        days: dict[str, dt.date] = {}
        flag_sets: dict[tuple[str, ...], tuple[str, ...]] = {}
        offers = []
        for row in rows:
            if len(row) != _FIELDS:
                return None
            cloud, name, region, market, price, captured, high, basis, bucket, flags = row
            day = days.get(captured) or days.setdefault(captured, dt.date.fromisoformat(captured))
            flag_tuple = tuple(flags)
            offer = Offer(
                cloud=cloud,
                instance_type=name,
                region=region,
                market=market,
                price_per_hour=float(price),
                captured_at=day,
                price_max_per_hour=None if high is None else float(high),
                price_basis=basis,
                interruption_bucket=bucket,
                flags=flag_sets.setdefault(flag_tuple, flag_tuple),
            )
            offers.append(offer)
    except (OSError, ValueError, TypeError):
        return None  # not kept yet, or damaged: read from the snapshot again
    return offers
