"""A store written by the first schema (fixture database) is migrated in place without loss."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from fixtures.store.samples import make_measurement, make_recommendation
from perdollar.store import open_store
from perdollar.store.migrate import HEAD, head_revision

FIXTURE = Path(__file__).parent / "fixtures" / "store" / "v1_store.db"


def _rows(path: Path, query: str) -> list[tuple]:
    with sqlite3.connect(path) as connection:
        return connection.execute(query).fetchall()


def test_v1_store_is_migrated_in_place_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copy(FIXTURE, path)
    assert _rows(path, "SELECT version_num FROM alembic_version") == [("0001",)]
    before_measurements = _rows(path, "SELECT id, payload FROM measurements ORDER BY id")
    before_recommendations = _rows(path, "SELECT id, payload FROM recommendations ORDER BY id")
    assert len(before_measurements) == 3 and len(before_recommendations) == 1

    with open_store(f"sqlite:///{path}") as store:
        # Every old row reads back as the object it was written from.
        assert [m.samples_per_second.median for m in store.measurements_for("fp-mlp-64")] == [
            1000.0,
            1001.0,
            1002.0,
        ]
        assert store.get_recommendation("r0") == make_recommendation(created_at="2026-05-02T00:00:00+00:00")
        # New columns: defaults for old measurements, top choice filled in from old payloads.
        history = store.list_history()
        assert {e.details.get("source") for e in history if e.kind == "measurement"} == {"bench"}
        assert [e.details["top_choice"] for e in history if e.kind == "recommendation"] == [
            "1x g5.xlarge spot (aws us-east-1)"
        ]
        # And the migrated store takes new rows, including the new table.
        store.save_measurement(make_measurement(), source="check")
        assert store.save_catalog_snapshot("snap-new", "2026-07-01", []) is True

    assert _rows(path, "SELECT version_num FROM alembic_version") == [(head_revision(),)]
    assert (
        _rows(path, "SELECT id, payload FROM measurements WHERE id LIKE 'm%' ORDER BY id")
        == before_measurements
    )
    assert _rows(path, "SELECT id, payload FROM recommendations ORDER BY id") == before_recommendations
    assert _rows(path, "PRAGMA integrity_check") == [("ok",)]


def test_fixture_file_itself_is_never_modified(tmp_path: Path) -> None:
    # The test above works on a copy; the fixture stays at the old schema for the next run.
    assert _rows(FIXTURE, "SELECT version_num FROM alembic_version") == [("0001",)]


def test_head_constant_matches_the_migration_scripts() -> None:
    assert head_revision() == HEAD
