"""`perdollar bench` end to end through real child processes: JSON, modes, verdict, --nproc.

The command line is called in this process (``perdollar.cli.main``); every benchmark it starts
still runs in its own child process.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from perdollar.cli import main
from perdollar.measure.serialize import measurement_from_dict, measurement_to_dict
from perdollar.measure.text import lines


@pytest.fixture(autouse=True)
def _quiet_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", "off")
    # One thread per child: on a shared 2-core machine two spinning OpenMP threads per process
    # slow every step down by orders of magnitude, and these tests check behaviour, not speed.
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@dataclass
class _Completed:
    returncode: int
    stdout: str
    stderr: str


Bench = Callable[..., _Completed]


@pytest.fixture
def bench(capsys: pytest.CaptureFixture[str]) -> Bench:
    def run(*args: str) -> _Completed:
        with pytest.raises(SystemExit) as exited:
            main(["bench", *args])
        captured = capsys.readouterr()
        return _Completed(int(exited.value.code or 0), captured.out, captured.err)

    return run


def test_bench_mlp_json_reports_a_steady_figure_with_spread(bench: Bench, tmp_path: Path) -> None:
    store = tmp_path / "results.db"
    completed = bench("mlp", "--json", "--duration", "4", "--store", f"sqlite:///{store}")
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["status"] == "ok"
    assert document["mode"] == "cached-input"
    rate = document["samples_per_second"]
    assert 0 < rate["low"] <= rate["median"] <= rate["high"]
    if document["extra"]["blocks"] >= 2:
        assert document["cv"] >= 0
    assert {"p10", "p50", "p90", "p99", "mean"} <= set(document["step_time_ms"])
    assert document["utilization"]["cpu_percent_per_core"]
    assert document["peak_memory_bytes"] > 0
    assert document["host"]["cpu_cores"] >= 1
    assert document["host"]["instance_type"] == "unknown"
    assert document["workload"]["name"] == "mlp"
    assert len(document["workload"]["fingerprint"]) == 16
    assert document["started_at"].startswith("20")
    assert document["extra"]["warmup_steps"] >= 3
    assert document["id"], "bench stores its result by default"
    assert store.exists()

    # The JSON is the serialised Measurement: it reads back, and prints with units and provenance.
    measurement = measurement_from_dict(document)
    assert measurement_to_dict(measurement) == {key: value for key, value in document.items() if key != "id"}
    text = "\n".join(lines(measurement))
    assert "samples/s" in text and "95% CI" in text and "measured on" in text


def test_bench_all_modes_gives_a_verdict(bench: Bench) -> None:
    completed = bench("mlp", "--mode", "all", "--duration", "1.5", "--json", "--no-store")
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    modes = [measurement["mode"] for measurement in document["measurements"]]
    assert modes == ["cached-input", "full", "data-only"]
    assert all(measurement["status"] == "ok" for measurement in document["measurements"])
    assert document["verdict"].split(":")[0] in {"input-bound", "compute-bound", "unclear"}


def test_bench_nproc_2_runs_ddp_with_gloo_and_reports_scaling(bench: Bench) -> None:
    completed = bench("--nproc", "2", "mlp", "--duration", "2", "--json", "--no-store")
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["status"] == "ok", document["message"]
    assert document["nproc"] == 2
    assert document["extra"]["backend"] == "gloo"
    assert document["scaling_efficiency"] > 0
    assert document["extra"]["single_process_samples_per_second"]["median"] > 0


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["mlp", "--mode", "sideways"], "unknown mode"),
        (["mlp", "--nproc", "0"], "--nproc"),
        (["mlp", "--duration", "soon"], "--duration"),
        (["mlp", "--memory-limit", "lots"], "--memory-limit"),
    ],
)
def test_bad_options_are_one_line_errors(bench: Bench, args: list[str], fragment: str) -> None:
    completed = bench(*args, "--no-store")
    assert completed.returncode == 2
    assert fragment in completed.stderr
    assert "Traceback" not in completed.stderr
