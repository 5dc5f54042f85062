"""The store on a real PostgreSQL server (started by the test, or by .ci/run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from fixtures.store.bench import needs_slow_opt_in, run_concurrent_benches
from fixtures.store.postgres import postgres_server, postgres_url  # noqa: F401 - pytest fixtures
from fixtures.store.samples import make_measurement, make_recommendation
from perdollar.store import open_store
from perdollar.store.migrate import head_revision


def test_round_trip_and_history_on_postgres(postgres_url: str) -> None:  # noqa: F811
    measurement, recommendation = make_measurement(), make_recommendation()
    with open_store(postgres_url) as store:
        assert store.engine.dialect.name == "postgresql"
        measurement_id = store.save_measurement(measurement)
        recommendation_id = store.save_recommendation(recommendation)
        assert store.measurements_for("fp-mlp-64") == [measurement]
        assert store.get_recommendation(recommendation_id[:5]) == recommendation
        assert {e.id for e in store.list_history()} == {measurement_id, recommendation_id}
    with sa.create_engine(postgres_url).connect() as connection:
        assert (
            connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
        )


def test_plain_postgresql_scheme_uses_psycopg(postgres_url: str) -> None:  # noqa: F811
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://")
    with open_store(plain) as store:
        assert store.engine.dialect.driver == "psycopg"
        store.save_measurement(make_measurement())


@pytest.mark.slow
@needs_slow_opt_in
def test_sixteen_concurrent_bench_processes_into_postgres(postgres_url: str) -> None:  # noqa: F811
    # The benches also race to create and migrate the empty database (advisory lock).
    results = run_concurrent_benches(postgres_url)
    assert len(results) == 16
    with open_store(postgres_url) as store:
        stored = store.list_history(workload="mlp", kind="measurement")
        assert len(stored) == 16
        assert len(store.measurements_for(stored[0].workload_fingerprint, ok_only=False)) == 16


def test_sixteen_concurrent_writer_processes_on_postgres(postgres_url: str) -> None:  # noqa: F811
    # Sixteen processes race to create and migrate the empty database, then commit 3 rows each.
    writer = Path(__file__).parent / "fixtures" / "store" / "writer.py"
    processes = [
        subprocess.Popen(
            [sys.executable, str(writer), postgres_url, "3", f"w{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(16)
    ]
    committed: set[str] = set()
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        committed |= {line.split()[1] for line in out.splitlines() if line.startswith("committed")}
    assert len(committed) == 48
    with open_store(postgres_url) as store:
        assert {e.id for e in store.list_history(kind="measurement")} == committed
