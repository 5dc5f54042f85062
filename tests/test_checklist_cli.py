"""`perdollar check` measures the workload for real and prints the checklist with evidence."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar.store import open_store


@pytest.mark.slow
def test_check_mlp_measures_and_reports_every_item() -> None:
    done = run_perdollar("check", "mlp", "--duration", "1", "--nproc", "1", "--json", timeout=400)
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


@pytest.mark.slow
def test_check_instance_judges_feeding_and_network_at_the_instances_predicted_rate() -> None:
    def run(*args: str) -> dict:  # type: ignore[type-arg]
        done = run_perdollar(*args, "--json", timeout=400)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    predicted = run("predict", "mlp", "--instance", "g5.xlarge")["prediction"]["samples_per_second"]
    result = run("check", "mlp", "--instance", "g5.xlarge", "--duration", "1", "--nproc", "1", "--no-store")
    items = {item["key"]: item for item in result["items"]}
    fed = f"{predicted:,.0f} samples/s (predicted on A10G)"
    assert fed in items["cpu-ratio"]["evidence"], (fed, items["cpu-ratio"]["evidence"])
    assert fed.replace(" samples/s", " samples/s per device") in items["network-ingest"]["evidence"]
