"""Rows the store cannot read back: skipped with a warning that names them, listed on request.

A row can be damaged by hand edits, a disk error or another program writing to the database.
Reading one must not take a command down: the row is left out with a warning naming its id,
and ``perdollar history --check`` lists every such row so that it can be looked at or deleted.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from perdollar.errors import PerdollarWarning
from perdollar.jsonable import JsonValue
from perdollar.store import codec, schema
from perdollar.store.history import TableRow, measurement_entry, recommendation_entry
from perdollar.store.snapshots import offers_from_payload

T = TypeVar("T")


class DamagedRowWarning(PerdollarWarning):
    """A stored row was skipped because it cannot be decoded."""


@dataclass(frozen=True, slots=True)
class DamagedRow:
    kind: str  # measurement | recommendation | catalog snapshot
    id: str
    reason: str


def why(error: BaseException) -> str:
    """The decoding error in a few words, on one line."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:200] if text else type(error).__name__


def decoded(kind: str, row_id: str, payload: str, decode: Callable[[JsonValue], T]) -> T | None:
    """``decode(json of payload)``, or None with a :class:`DamagedRowWarning` naming the row (the
    payload: an object, or a catalog snapshot's list of offers)."""
    try:
        return decode(json.loads(payload))
    except Exception as error:  # any way a row can be damaged must skip it, not stop the command
        warn_skipped(kind, row_id, error)
        return None


def warn_skipped(kind: str, row_id: str, error: BaseException) -> None:
    warnings.warn(
        DamagedRowWarning(
            f"skipped the stored {kind} {row_id}: it cannot be read ({why(error)}); "
            "`perdollar history --check` lists every damaged row"
        ),
        stacklevel=3,
    )


def _problems(
    kind: str, rows: Iterable[TableRow], checks: tuple[Callable[[TableRow], object], ...]
) -> Iterator[DamagedRow]:
    for row in rows:
        for check in checks:
            try:
                check(row)
            except Exception as error:
                yield DamagedRow(kind, str(row[0]), why(error))
                break


def damaged_rows(engine: Engine) -> list[DamagedRow]:
    """Every row whose payload or listed columns cannot be read back, in table order."""
    measurements, recommendations, snapshots = (
        schema.measurements,
        schema.recommendations,
        schema.catalog_snapshots,
    )
    found: list[DamagedRow] = []
    with engine.connect() as connection:
        found += _problems(
            "measurement",
            connection.execute(sa.select(measurements).order_by(measurements.c.stored_at)),
            (lambda row: codec.measurement_from_payload(json.loads(row.payload)), measurement_entry),
        )
        found += _problems(
            "recommendation",
            connection.execute(sa.select(recommendations).order_by(recommendations.c.created_at)),
            (lambda row: codec.recommendation_from_payload(json.loads(row.payload)), recommendation_entry),
        )
        found += _problems(
            "catalog snapshot",
            connection.execute(sa.select(snapshots.c.snapshot_id, snapshots.c.payload)),
            (lambda row: offers_from_payload(json.loads(row.payload)),),
        )
    return found
