"""The local latency curve: point summaries, early stopping, failures as results, the CLI path."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.measure.latency import (
    LatencyPoint,
    batch_ladder,
    is_plateau,
    measure_latency_curve,
    stop_reason,
    summarize_point,
    sweep,
)


def _point(batch: int, samples_per_second: float, p99_ms: float = 1.0, status: str = "ok") -> LatencyPoint:
    return LatencyPoint(
        batch,
        1,
        10,
        1.0,
        1.0,
        1.0,
        p99_ms,
        1.0,
        0.5,
        samples_per_second / batch,
        samples_per_second,
        status=status,
        message="CUDA out of memory" if status != "ok" else "",
    )


def test_summary_percentiles_and_throughput() -> None:
    latencies = [0.001 * i for i in range(1, 101)]  # 1 … 100 ms
    point = summarize_point(4, 2, latencies, elapsed_s=2.0)
    assert point.requests == 100
    assert point.p50_ms == pytest.approx(50.5)
    assert point.p99_ms == pytest.approx(99.01)
    assert point.requests_per_second == pytest.approx(50.0)
    assert point.samples_per_second == pytest.approx(200.0)
    assert point.min_ms == pytest.approx(1.0)


def test_plateau_and_stop_rules() -> None:
    assert not is_plateau(None, _point(1, 100))
    assert is_plateau(_point(1, 100), _point(2, 104))
    assert not is_plateau(_point(1, 100), _point(2, 106))
    assert "ceiling" in stop_reason(
        [_point(8, 1e3, p99_ms=30)], p99_ceiling_ms=20, max_batch=None, next_batch=16
    )
    assert "oom" in stop_reason(
        [_point(8, 0, status="oom")], p99_ceiling_ms=None, max_batch=None, next_batch=16
    )
    assert "largest batch" in stop_reason([_point(8, 1e3)], p99_ceiling_ms=None, max_batch=8, next_batch=16)
    assert stop_reason([_point(8, 1e3)], p99_ceiling_ms=None, max_batch=None, next_batch=16) == ""
    assert batch_ladder(1, 20) == [1, 2, 4, 8, 16]
    assert batch_ladder(3, 12) == [3, 6, 12]


def test_sweep_stops_when_throughput_plateaus() -> None:
    # Each call costs more than proportionally to the batch (even with sleep overshooting
    # on a busy machine), so samples/s can only fall as the batch grows.
    def make_runner(batch: int):
        return lambda: time.sleep(0.002 * batch**1.5)

    points, reason, _ = sweep(
        make_runner,
        batch_sizes=[1, 2, 4, 8, 16, 32],
        concurrency=[1],
        point_seconds=0.15,
        p99_ceiling_ms=None,
        max_batch=None,
    )
    assert "plateau" in reason
    assert max(p.batch_size for p in points) < 32


def test_sweep_records_out_of_memory_and_stops() -> None:
    def make_runner(batch: int):
        def run() -> None:
            if batch >= 4:
                raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

        return run

    points, reason, _ = sweep(
        make_runner,
        batch_sizes=[1, 2, 4, 8],
        concurrency=[1, 2],
        point_seconds=0.05,
        p99_ceiling_ms=None,
        max_batch=None,
    )
    assert points[-1].batch_size == 4 and points[-1].status == "oom"
    assert reason.startswith("batch 4: oom")
    assert {p.batch_size for p in points if p.status == "ok"} == {1, 2}


CRASHING = """
import torch
from perdollar.workload.spec import Workload

class Broken(torch.nn.Module):
    def forward(self, x):
        raise ValueError("this model is broken on purpose")

def make():
    return Workload(name="broken", model_factory=Broken,
                    input_factory=lambda batch, device: (torch.zeros(batch, 4, device=device),
                                                         torch.zeros(batch, device=device)),
                    batch_size=1, kind="inference")
"""


def test_a_crashing_workload_is_a_recorded_result(tmp_path: Path) -> None:
    script = tmp_path / "broken_model.py"
    script.write_text(CRASHING, encoding="utf-8")
    curve = measure_latency_curve(
        f"{script}:make", batch_sizes=[1], concurrency=[1], point_seconds=0.1, device="cpu", timeout_s=120
    )
    assert curve.status == "ok"  # the sweep itself ran; the point failed
    assert curve.points[0].status == "error"
    assert "broken on purpose" in curve.points[0].message


def test_bench_inference_cli_prints_a_curve() -> None:
    completed = run_perdollar(
        "bench", "mlp", "--inference", "--max-batch", "4", "--concurrency", "1,2", "--duration", "0.2",
        "--json", "--no-store",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-2000:]
    payload = json.loads(completed.stdout)
    points = payload["curve"]["points"]
    assert {p["batch_size"] for p in points} <= {1, 2, 4}
    assert all(p["status"] == "ok" for p in points)
    first = points[0]
    assert first["requests"] > 0
    assert first["p50_ms"] <= first["p90_ms"] <= first["p95_ms"] <= first["p99_ms"]
    assert payload["curve"]["stop_reason"]
