"""The serving path: a real uvicorn server on loopback, the real load generator, the CLI."""

from __future__ import annotations

import json

import httpx
import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.measure.serving.loadgen import check_loopback, closed_loop, open_loop
from perdollar.measure.serving.server import running_server
from perdollar.sandbox import UserCodeFailed


def test_noop_server_answers_the_load_generator() -> None:
    with running_server(None) as server:
        health = httpx.get(f"http://{server.host}:{server.port}/healthz", timeout=10).json()
        assert health == {"ok": True, "workload": "", "batch_size": 1, "model_loaded": False}
        missing = httpx.post(f"http://{server.host}:{server.port}/predict", content=b"{}", timeout=10)
        assert missing.status_code == 503

        closed = closed_loop(server.host, server.port, duration_s=0.5, connections=8, max_requests=400)
        assert closed.errors == 0
        assert 0 < closed.requests <= 400 + 8  # bounded by the request budget
        opened = open_loop(
            server.host,
            server.port,
            rate=200,
            duration_s=0.5,
            path="/noop",
            method="GET",
            body=b"",
            connections=8,
            seed=1,
        )
    assert opened.errors == 0
    assert opened.requests == 100  # exactly rate × duration requests were offered
    assert opened.p50_ms <= opened.p90_ms <= opened.p95_ms <= opened.p99_ms <= opened.max_ms
    assert opened.scheduled_rps is not None and opened.scheduled_rps > 0


def test_a_closed_loop_sends_once_per_connection_even_when_its_window_has_passed() -> None:
    # A window already over when the workers first run (a starved machine) still measures.
    with running_server(None) as server:
        closed = closed_loop(server.host, server.port, duration_s=0.0, connections=4, max_requests=400)
    assert closed.errors == 0
    assert closed.requests == 4


def test_model_server_runs_the_workload_per_request() -> None:
    with running_server("mlp", batch_size=2, device="cpu") as server:
        response = httpx.post(f"http://{server.host}:{server.port}/predict", content=b"{}", timeout=30)
        assert response.status_code == 200
        assert response.json() == {"batch_size": 2}
        result = open_loop(server.host, server.port, rate=50, duration_s=0.4, connections=4, seed=2)
    assert server.batch_size == 2 and server.workload == "mlp"
    assert result.errors == 0 and result.requests == 20


def test_loading_a_stopped_server_fails_loudly() -> None:
    with running_server(None) as server:
        host, port = server.host, server.port
    with pytest.raises(OSError):
        closed_loop(host, port, duration_s=0.2, connections=2)


def test_only_loopback_targets_are_allowed() -> None:
    check_loopback("127.0.0.1")
    check_loopback("::1")
    with pytest.raises(PerdollarError, match="not a loopback address"):
        check_loopback("10.0.0.7")
    with pytest.raises(PerdollarError, match="not a loopback address"):
        open_loop("example.com", 80, rate=1, duration_s=1)


def test_a_server_that_cannot_load_its_workload_is_a_clear_error() -> None:
    with (
        pytest.raises(UserCodeFailed, match=r"starting the model server for .* failed"),
        running_server("no-such-workload-anywhere", start_timeout_s=120),
    ):
        pass


def test_serve_bench_cli_reports_each_rate() -> None:
    completed = run_perdollar(
        "serve-bench", "mlp", "--rates", "10,40", "--step-seconds", "0.5", "--json", timeout=240
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    payload = json.loads(completed.stdout)
    assert payload["endpoint"] == "/predict" and payload["batch_size"] == 1
    assert payload["in_process_forward_ms"] > 0
    offered = [step["offered_rps"] for step in payload["steps"]]
    assert offered[0] == 10
    assert all(step["p99_ms"] >= step["p50_ms"] for step in payload["steps"])
    assert payload["stop_reason"]


def test_serve_bench_rejects_bad_rates() -> None:
    completed = run_perdollar("serve-bench", "mlp", "--rates", "ten", timeout=120)
    assert completed.returncode == 2
    assert "--rates 'ten' is not a list of numbers" in completed.stderr
    assert "Traceback" not in completed.stderr
