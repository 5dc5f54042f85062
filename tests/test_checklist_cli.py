"""`perdollar check` measures the workload for real and prints the checklist with evidence."""

from __future__ import annotations

import json
import subprocess

import pytest

from fixtures.store.bench import perdollar_command
from perdollar.store import open_store


@pytest.mark.slow
def test_check_mlp_measures_and_reports_every_item() -> None:
    done = subprocess.run(
        [*perdollar_command(), "check", "mlp", "--duration", "1", "--nproc", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    items = {item["key"]: item for item in result["items"]}
    assert list(items) == [
        "input-bound",
        "utilisation",
        "memory-headroom",
        "mixed-precision",
        "cpu-ratio",
        "scaling",
        "network-ingest",
    ]
    # Measured on this CPU host: the input, utilisation, memory and CPU checks have real numbers.
    assert items["input-bound"]["status"] in ("pass", "warn", "fail")
    assert "samples/s vs cached input" in items["input-bound"]["evidence"]
    assert items["utilisation"]["evidence"].startswith("CPU (no accelerator on this host) busy")
    assert (
        items["memory-headroom"]["status"] in ("pass", "warn")
        and "peak" in items["memory-headroom"]["evidence"]
    )
    assert items["cpu-ratio"]["status"] != "unknown"
    assert items["scaling"]["status"] == "unknown"  # --nproc 1: not measured, and it says so
    # The three measurements were stored for later calibration and history.
    with open_store() as store:
        assert len(store.measurements_for(result["fingerprint"], ok_only=False)) == 3
