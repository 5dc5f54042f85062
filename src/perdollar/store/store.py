"""The results store: measurements, recommendations and catalog snapshots, kept for history."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine
from sqlalchemy.exc import DatabaseError, OperationalError

from perdollar.errors import PerdollarError
from perdollar.jsonable import JsonObject, JsonValue
from perdollar.measure.result import Measurement
from perdollar.store import codec, schema
from perdollar.store.damage import DamagedRow, damaged_rows, decoded, warn_skipped, why
from perdollar.store.engine import make_engine, parse_url, sqlite_path, with_retry
from perdollar.store.guard import probe_write, refuse_foreign_sqlite
from perdollar.store.history import HistoryEntry, TableRow, measurement_entry, recommendation_entry
from perdollar.store.migrate import ensure_schema
from perdollar.store.snapshots import offers_from_payload

if TYPE_CHECKING:
    from perdollar.select.model import Recommendation


T = TypeVar("T")


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _new_id() -> str:
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class StoredRecommendation:
    id: str
    recommendation: Recommendation


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    snapshot_id: str
    captured_at: str
    offers: tuple[JsonObject, ...]  # cloud, instance_type, region, market, price_per_hour


class Store:
    """A SQLAlchemy database holding perdollar's results; open it with :func:`open_store`."""

    def __init__(self, url: URL, engine: Engine) -> None:
        self.url = url
        self.engine = engine

    @property
    def display_url(self) -> str:
        return self.url.render_as_string(hide_password=True)

    def close(self) -> None:
        self.engine.dispose()

    def check_writable(self) -> None:
        """Raise a one-line error now if a result could not be written later."""
        probe_write(self.engine, self.display_url)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # --- writing (each call is one transaction, retried while the database is busy) -------

    def _write(self, statements: Sequence[sa.Executable]) -> None:
        def transaction() -> None:
            with self.engine.connect().execution_options(write=True) as connection, connection.begin():
                for statement in statements:
                    connection.execute(statement)

        with_retry(transaction)

    def save_measurement(self, measurement: Measurement, *, source: str = "bench") -> str:
        return self.save_measurements([measurement], source=source)[0]

    def save_measurements(self, measurements: Iterable[Measurement], *, source: str = "bench") -> list[str]:
        """Store several measurements in one transaction (all or none); return their ids."""
        rows = [self._measurement_row(m, source) for m in measurements]
        if rows:
            self._write([schema.measurements.insert().values(rows)])
        return [str(row["id"]) for row in rows]

    @staticmethod
    def _measurement_row(measurement: Measurement, source: str) -> dict[str, str | int | float | None]:
        rate = measurement.samples_per_second
        host = measurement.host
        return {
            "id": _new_id(),
            "workload_fingerprint": measurement.workload_fingerprint,
            "workload_name": measurement.workload_name[:200],
            "mode": measurement.mode,
            "status": measurement.status,
            "batch_size": measurement.batch_size,
            "precision": measurement.precision,
            "host_instance_type": (host.instance_type or "unknown")[:100],
            "host_accelerator": (host.accelerator_key or host.accelerator or None),
            "samples_per_second": rate.median if rate is not None else None,
            "started_at": measurement.started_at,
            "stored_at": _now(),
            "payload": json.dumps(codec.measurement_to_payload(measurement), allow_nan=False),
            "source": source,
        }

    def save_recommendation(self, recommendation: Recommendation) -> str:
        question = recommendation.question
        headline = codec.headline(recommendation)
        row = {
            "id": _new_id(),
            "workload_fingerprint": question.workload_fingerprint,
            "workload_name": (question.workload_label or question.workload_name)[:200],
            "kind": question.goal.kind,
            "objective": question.goal.objective,
            "catalog_snapshot_id": recommendation.catalog_snapshot_id,
            "catalog_captured_at": recommendation.catalog_captured_at,
            "created_at": recommendation.created_at or _now(),
            "payload": codec.dumps(codec.recommendation_to_payload(recommendation)),
            "top_choice": headline[:300] if headline else None,
        }
        self._write([schema.recommendations.insert().values(row)])
        return str(row["id"])

    def save_catalog_snapshot(
        self, snapshot_id: str, captured_at: str, offers: Sequence[Mapping[str, object]]
    ) -> bool:
        """Keep the prices a recommendation used; False when that snapshot is already stored."""
        if self.catalog_snapshot(snapshot_id) is not None:
            return False
        row = {
            "snapshot_id": snapshot_id,
            "captured_at": captured_at,
            "stored_at": _now(),
            "offer_count": len(offers),
            "payload": codec.dumps(list(offers)),
        }
        try:
            self._write([schema.catalog_snapshots.insert().values(row)])
        except sa.exc.IntegrityError:  # another process stored it first
            return False
        return True

    # --- reading --------------------------------------------------------------------------

    def measurements_for(self, workload_fingerprint: str, *, ok_only: bool = True) -> list[Measurement]:
        """Measurements of this exact workload configuration, oldest first."""
        table = schema.measurements
        query = sa.select(table.c.id, table.c.payload).where(
            table.c.workload_fingerprint == workload_fingerprint
        )
        if ok_only:
            query = query.where(table.c.status == "ok")
        with self.engine.connect() as connection:
            rows = connection.execute(query.order_by(table.c.started_at, table.c.stored_at)).all()
        read = [decoded("measurement", row.id, row.payload, codec.measurement_from_payload) for row in rows]
        return [measurement for measurement in read if measurement is not None]

    def get_measurement(self, measurement_id: str) -> Measurement:
        table = schema.measurements
        row_id = self._resolve(table, table.c.id, measurement_id, "measurement")
        with self.engine.connect() as connection:
            payload = connection.execute(sa.select(table.c.payload).where(table.c.id == row_id)).scalar_one()
        return _readable("measurement", row_id, payload, codec.measurement_from_payload)

    def get_recommendation(self, recommendation_id: str) -> Recommendation:
        return self.get_stored_recommendation(recommendation_id).recommendation

    def get_stored_recommendation(
        self, recommendation_id: str | None = None, *, workload: str | None = None
    ) -> StoredRecommendation:
        """By id (or unique id prefix); without one, the newest (for ``workload`` if given)."""
        table = schema.recommendations
        if recommendation_id:
            row_id = self._resolve(table, table.c.id, recommendation_id, "recommendation")
            query = sa.select(table.c.id, table.c.payload).where(table.c.id == row_id)
        else:
            query = sa.select(table.c.id, table.c.payload).order_by(table.c.created_at.desc())
            if workload:
                query = query.where(table.c.workload_name == workload)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        if recommendation_id:
            return StoredRecommendation(
                rows[0].id,
                _readable("recommendation", rows[0].id, rows[0].payload, codec.recommendation_from_payload),
            )
        for row in rows:  # the newest one that can be read; damaged ones are named and passed over
            recommendation = decoded("recommendation", row.id, row.payload, codec.recommendation_from_payload)
            if recommendation is not None:
                return StoredRecommendation(row.id, recommendation)
        raise PerdollarError(
            f"no {'readable ' if rows else ''}recommendation is stored"
            + (f" for workload {workload!r}" if workload else ""),
            "run `perdollar recommend WORKLOAD` first (it stores its answer unless --no-store)",
        )

    def catalog_snapshot(self, snapshot_id: str) -> CatalogSnapshot | None:
        table = schema.catalog_snapshots
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(table.c.captured_at, table.c.payload).where(table.c.snapshot_id == snapshot_id)
            ).first()
        if row is None:
            return None
        offers = decoded("catalog snapshot", snapshot_id, row.payload, offers_from_payload)
        if offers is None:
            return None
        return CatalogSnapshot(snapshot_id, row.captured_at, offers)

    def readable_recommendations(self) -> list[StoredRecommendation]:
        """Every recommendation whose payload decodes, oldest first; the others are
        :meth:`damaged_rows`, so they are passed over here without a warning."""
        table = schema.recommendations
        query = sa.select(table.c.id, table.c.payload).order_by(table.c.created_at)
        with self.engine.connect() as connection:
            rows = connection.execute(query).all()
        found = []
        for row in rows:
            try:
                found.append(
                    StoredRecommendation(row.id, codec.recommendation_from_payload(json.loads(row.payload)))
                )
            except Exception:  # every way a row can be damaged is listed by damaged_rows
                continue
        return found

    def damaged_rows(self) -> list[DamagedRow]:
        """Every stored row that cannot be read back (see ``perdollar history --check``)."""
        return damaged_rows(self.engine)

    def _resolve(self, table: sa.Table, column: sa.Column[str], given: str, what: str) -> str:
        with self.engine.connect() as connection:
            ids = (
                connection.execute(sa.select(column).where(column.like(f"{given}%")).limit(2)).scalars().all()
            )
        if len(ids) == 1:
            return str(ids[0])
        if not ids:
            raise PerdollarError(
                f"no {what} with id {given!r} in the store {self.display_url}",
                "see `perdollar history` for the stored ids",
            )
        raise PerdollarError(f"{what} id {given!r} is ambiguous", "give more characters of the id")

    def list_history(
        self, *, workload: str | None = None, kind: str | None = None, limit: int | None = None
    ) -> list[HistoryEntry]:
        """Measurements and recommendations, newest first; ``workload`` matches name or fingerprint."""
        entries: list[HistoryEntry] = []
        with self.engine.connect() as connection:
            if kind in (None, "measurement"):
                rows = connection.execute(
                    self._filtered(schema.measurements, workload, limit, schema.measurements.c.started_at)
                )
                entries += _entries("measurement", rows, measurement_entry)
            if kind in (None, "recommendation"):
                rows = connection.execute(
                    self._filtered(
                        schema.recommendations, workload, limit, schema.recommendations.c.created_at
                    )
                )
                entries += _entries("recommendation", rows, recommendation_entry)
        entries.sort(key=lambda e: e.at, reverse=True)
        return entries[:limit] if limit else entries

    @staticmethod
    def _filtered(
        table: sa.Table, workload: str | None, limit: int | None, at: sa.Column[str]
    ) -> sa.Select[tuple[object, ...]]:
        query = sa.select(table).order_by(at.desc())
        if workload:
            query = query.where(
                sa.or_(table.c.workload_name == workload, table.c.workload_fingerprint.like(f"{workload}%"))
            )
        return query.limit(limit) if limit else query


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """Open (creating and migrating as needed) the store at ``url``, ``PERDOLLAR_STORE`` or the default.

    With ``create=False`` a SQLite file that does not exist is an error, not a new empty store (a
    command that only reads must not leave a file at a mistyped path).
    """
    from perdollar.paths import default_store_url

    parsed = parse_url(url or default_store_url())
    display = parsed.render_as_string(hide_password=True)
    path = sqlite_path(parsed)
    if path is not None:
        if not create and not path.exists():
            raise StoreMissingError(
                f"there is no store at {path}",
                "check the path; `perdollar bench` and `perdollar recommend` create the store",
            )
        refuse_foreign_sqlite(path, display)
    engine = make_engine(parsed)
    try:
        ensure_schema(engine, sqlite_path(parsed))
    except PerdollarError:
        engine.dispose()
        raise
    except OperationalError as error:
        engine.dispose()
        raise PerdollarError(
            f"cannot open the store {parsed.render_as_string(hide_password=True)}: {_one_line(error.orig)}",
            "check the URL, that the server is running and that you may write there",
        ) from error
    except DatabaseError as error:
        engine.dispose()
        raise PerdollarError(
            f"{parsed.render_as_string(hide_password=True)} is not a usable perdollar store "
            f"({_one_line(error.orig)})",
            "point --store or PERDOLLAR_STORE at another file; this one was left untouched",
        ) from error
    return Store(parsed, engine)


def _readable(kind: str, row_id: str, payload: str, decode: Callable[[JsonValue], T]) -> T:
    """The row asked for by its id: damaged, it is an error that says so (there is no other to give)."""
    try:
        return decode(json.loads(payload))
    except Exception as error:
        raise PerdollarError(
            f"the stored {kind} {row_id} cannot be read ({why(error)})",
            "`perdollar history --check` lists damaged rows; ask for another id",
        ) from error


def _entries(
    kind: str, rows: Iterable[TableRow], entry: Callable[[TableRow], HistoryEntry]
) -> list[HistoryEntry]:
    listed = []
    for row in rows:
        try:
            listed.append(entry(row))
        except Exception as error:  # a damaged row is skipped and named, never a traceback
            warn_skipped(kind, str(row.id), error)
    return listed


class StoreMissingError(PerdollarError):
    """A command that only reads was pointed at a SQLite file that does not exist."""


def _one_line(message: object) -> str:
    # Driver messages (psycopg's above all) span lines; the CLI reports each problem on one.
    return " ".join(str(message).split())
