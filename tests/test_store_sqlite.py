"""The SQLite store: round trips, history, ids, schema version and bad input."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from fixtures.store.samples import make_measurement, make_recommendation
from perdollar.ask.inputs import stored_measurements
from perdollar.cli import persist
from perdollar.errors import PerdollarError
from perdollar.store import open_store
from perdollar.store.migrate import head_revision


def test_measurements_round_trip_and_filter_by_fingerprint(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    first, second = (
        make_measurement(rate=1000.0),
        make_measurement(rate=1200.0, started_at="2026-06-02T00:00:00+00:00"),
    )
    other = make_measurement(fingerprint="fp-other")
    failed = make_measurement(
        status="oom", message="does not fit at batch 4096", started_at="2026-06-03T00:00:00+00:00"
    )
    with open_store(url) as store:
        ids = [store.save_measurement(m) for m in (first, second, other, failed)]
        assert len(set(ids)) == 4
        assert store.measurements_for("fp-mlp-64") == [first, second]  # ok only, oldest first
        assert store.measurements_for("fp-mlp-64", ok_only=False)[-1] == failed
        assert store.get_measurement(ids[2][:6]) == other


def test_recommendation_round_trip_history_and_latest(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    old = make_recommendation(created_at="2026-06-01T00:00:00+00:00")
    new = make_recommendation(
        workload="bert-base", fingerprint="fp-bert", created_at="2026-07-01T00:00:00+00:00"
    )
    with open_store(url) as store:
        old_id, new_id = store.save_recommendation(old), store.save_recommendation(new)
        store.save_measurement(make_measurement(started_at="2026-06-15T00:00:00+00:00"))
        assert store.get_recommendation(old_id) == old
        assert store.get_stored_recommendation().id == new_id
        assert store.get_stored_recommendation(workload="vit-b16").recommendation == old
        history = store.list_history()
        assert [e.kind for e in history] == ["recommendation", "measurement", "recommendation"]
        assert history[0].details["top_choice"] == "1x g5.xlarge spot (aws us-east-1)"
        assert [e.id for e in store.list_history(workload="vit-b16")] == [old_id]
        assert [e.kind for e in store.list_history(kind="measurement")] == ["measurement"]
        assert len(store.list_history(limit=2)) == 2


def test_sqlite_store_runs_in_wal_mode_at_the_newest_schema(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    open_store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert connection.execute("SELECT version_num FROM alembic_version").fetchone()[0] == head_revision()


def test_default_store_lives_in_the_data_dir(_isolated_home: Path) -> None:
    with open_store() as store:
        store.save_measurement(make_measurement())
    assert (_isolated_home / "perdollar.sqlite").exists()


def test_unknown_and_ambiguous_ids_are_one_line_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = iter(["abc111", "abc222"])
    monkeypatch.setattr("perdollar.store.store._new_id", lambda: next(ids))
    with open_store(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
        with pytest.raises(PerdollarError, match="no recommendation with id 'zzz'"):
            store.get_recommendation("zzz")
        with pytest.raises(PerdollarError, match="no recommendation is stored"):
            store.get_stored_recommendation()
        store.save_measurement(make_measurement(rate=1.0))
        store.save_measurement(make_measurement(rate=2.0))
        with pytest.raises(PerdollarError, match="ambiguous"):
            store.get_measurement("abc")
        assert store.get_measurement("abc2").samples_per_second.median == 2.0


def test_a_store_from_a_newer_perdollar_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "store.sqlite"
    with open_store(f"sqlite:///{path}") as store:
        store.save_measurement(make_measurement())
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(PerdollarError, match="newer perdollar"):
        open_store(f"sqlite:///{path}")
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM measurements").fetchone()[0] == 1


def test_a_file_that_is_not_a_database_is_an_error_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(PerdollarError, match="not a usable perdollar store"):
        open_store(f"sqlite:///{path}")
    assert path.read_text().startswith("these are my notes")


def test_malformed_url_and_missing_driver_are_one_line_errors() -> None:
    with pytest.raises(PerdollarError, match="not a SQLAlchemy URL"):
        open_store("not a url")
    with pytest.raises(PerdollarError, match="driver"):
        open_store("nosuchdb+nodriver://user@host/db")


def test_persist_hooks_store_and_read_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hooks.sqlite'}"
    measurement = make_measurement()
    assert persist.save_measurement(measurement, store_url=url, enabled=False) is None
    assert stored_measurements("fp-mlp-64", store_url=url) == []
    assert persist.save_measurement(measurement, store_url=url)
    assert stored_measurements("fp-mlp-64", store_url=url) == [measurement]
    recommendation_id = persist.save_recommendation(make_recommendation(), store_url=url)
    with open_store(url) as store:
        assert store.get_recommendation(recommendation_id) == make_recommendation()


def test_persist_store_url_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env.sqlite"
    monkeypatch.setenv("PERDOLLAR_STORE", f"sqlite:///{path}")
    persist.save_measurement(make_measurement(), store_url=None)
    engine = sa.create_engine(f"sqlite:///{path}")
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM measurements")).scalar() == 1
    engine.dispose()


def test_catalog_snapshot_is_stored_once(tmp_path: Path) -> None:
    offers = [
        {
            "cloud": "aws",
            "instance_type": "g5.xlarge",
            "region": "us-east-1",
            "market": "spot",
            "price_per_hour": 0.4,
        }
    ]
    with open_store(f"sqlite:///{tmp_path / 's.sqlite'}") as store:
        assert store.save_catalog_snapshot("snap-1", "2026-06-01", offers) is True
        assert store.save_catalog_snapshot("snap-1", "2026-06-01", offers) is False
        snapshot = store.catalog_snapshot("snap-1")
        assert snapshot is not None and snapshot.offers == tuple(offers)
        assert store.catalog_snapshot("snap-2") is None
