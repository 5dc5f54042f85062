"""The OpenAI-endpoint load generator against a local streaming server with known delays."""

from __future__ import annotations

import itertools
import json

import pytest

from cli_runner import run_perdollar
from llm_stream_server import streaming_server
from perdollar.fmt import mask_url, mask_urls_in
from perdollar.measure.serving.openai_load import (
    LoadSettings,
    arrival_times,
    llm_endpoint_fingerprint,
    rising_load,
)
from perdollar.store import open_store

FIRST_S, TOKEN_S, TOKENS = 0.05, 0.01, 20


def _settings(url: str, **changes: object) -> LoadSettings:
    base = {"url": url, "model": "tiny", "input_tokens": 8, "output_tokens": TOKENS, "step_seconds": 2.0,
            "max_requests_per_step": 12, "stall_s": 1.0, "request_timeout_s": 5.0}  # fmt: skip
    return LoadSettings(**(base | changes))  # type: ignore[arg-type]


@pytest.mark.parametrize("chat", [False, True])
def test_ttft_and_tpot_percentiles_match_the_servers_delays(chat: bool) -> None:
    with streaming_server(FIRST_S, TOKEN_S, max_seconds=60) as url:
        run = rising_load(_settings(url, chat=chat), [4.0, 8.0])
    assert len(run.steps) == 2 and run.stop_reason == "reached the last rate"
    for step in run.steps:
        assert step.ok == step.sent > 0 and step.errors == step.timeouts == step.dropped == 0
        # The server waits 50 ms for the first token, then 10 ms a token: nothing can come sooner,
        # and on an idle loopback little later.
        assert FIRST_S * 1e3 <= step.ttft_ms["p50"] < FIRST_S * 1e3 + 150
        assert TOKEN_S * 1e3 * 0.9 <= step.tpot_ms["p50"] < TOKEN_S * 1e3 + 40
        assert step.ttft_ms["p50"] <= step.ttft_ms["p90"] <= step.ttft_ms["p99"]
        expected_e2e = (FIRST_S + (TOKENS - 1) * TOKEN_S) * 1e3
        assert expected_e2e <= step.end_to_end_ms["p50"] < expected_e2e + 300
        assert step.output_tokens_per_second == pytest.approx(step.ok * TOKENS / step.duration_s)
    assert run.best is not None


@pytest.mark.parametrize(
    ("behaviour", "field", "words"),
    [("error", "errors", "HTTP 500"), ("stall", "timeouts", "no token 2"), ("drop", "dropped", "")],
)
def test_a_failing_server_is_a_recorded_result_not_a_crash(behaviour: str, field: str, words: str) -> None:
    with streaming_server(FIRST_S, TOKEN_S, behaviour=behaviour, max_seconds=60) as url:
        run = rising_load(_settings(url, max_requests_per_step=4), [4.0, 8.0])
    assert len(run.steps) == 1 and "failed" in run.stop_reason  # stopped rising at the first failures
    step = run.steps[0]
    assert step.ok == 0 and getattr(step, field) == step.sent > 0
    assert words in step.failures[0]


def test_nothing_listening_is_an_error_per_request() -> None:
    with streaming_server() as url:
        pass  # started and stopped: the port is closed now
    run = rising_load(_settings(url, max_requests_per_step=3), [5.0])
    assert run.steps[0].errors == run.steps[0].sent == 3 and run.steps[0].ok == 0


def test_poisson_schedule_is_bounded_by_count_and_time() -> None:
    many = arrival_times(100.0, 50, 60.0, seed=1)
    assert len(many) == 50 and all(b > a for a, b in itertools.pairwise(many))
    brief = arrival_times(10.0, 10_000, 2.0, seed=1)
    assert max(brief) <= 2.0 and 5 < len(brief) < 40  # about 20 expected in 2 s at 10/s


# serve-bench's options after --url, the same in every run here.
BENCH = ("--model", "Tiny-LM", "--rates", "4", "--max-requests", "6", "--step-seconds", "2",
         "--output-tokens", str(TOKENS), "--stall-seconds", "1", "--accelerator", "L4")  # fmt: skip


def test_serve_bench_url_stores_a_measurement_of_the_model() -> None:
    with streaming_server(FIRST_S, TOKEN_S, max_seconds=90) as url:
        done = run_perdollar("serve-bench", "--url", url, *BENCH, "--json", columns=250)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "ok" and out["steps"][0]["ok"] == 6 and out["measurement_id"]
    with open_store(None) as store:
        stored = store.measurements_for(llm_endpoint_fingerprint("tiny-lm"))
    assert len(stored) == 1
    measurement = stored[0]
    assert measurement.host.accelerator_key == "L4" and measurement.utilization["unit"] == "output tokens/s"
    assert measurement.step_time_ms["ttft_p50"] >= FIRST_S * 1e3
    assert measurement.samples_per_second is not None and measurement.samples_per_second.median > 0


def test_serve_bench_url_against_a_failing_server_records_the_failure_and_exits_one() -> None:
    with streaming_server(FIRST_S, TOKEN_S, behaviour="drop", max_seconds=90) as url:
        done = run_perdollar("serve-bench", "--url", url, *BENCH, "--json", columns=250)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    out = json.loads(done.stdout)
    assert out["status"] == "error" and out["steps"][0]["dropped"] == 6
    with open_store(None) as store:
        assert store.measurements_for(llm_endpoint_fingerprint("tiny-lm"), ok_only=False)[0].status == "error"


@pytest.mark.parametrize(
    ("url", "shown"),
    [("http://user:hunter2@host:8000/v1", "http://***@host:8000/v1"),
     ("https://gw.example/v1?api_key=hunter2&model=x", "https://gw.example/v1?api_key=***&model=x"),
     ("http://u:hunter2@[::1/v1?access_token=hunter2", "http://***@[::1/v1?access_token=***"),
     ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1")],
)  # fmt: skip
def test_secrets_in_a_url_are_masked(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert mask_urls_in(f"HTTP 401 for url '{url}' (retry)") == f"HTTP 401 for url '{shown}' (retry)"


def test_credentials_in_the_url_are_never_printed_or_stored() -> None:
    with streaming_server(FIRST_S, TOKEN_S, max_seconds=90) as url:
        secret_url = url.replace("http://", "http://user:hunter2@") + "?api_key=hunter3"
        table = run_perdollar("serve-bench", "--url", secret_url, *BENCH, columns=250)
        document = run_perdollar("serve-bench", "--url", secret_url, *BENCH, "--json", columns=250)
    assert table.returncode == 0 and document.returncode == 0, table.stderr[-1500:]
    for done in (table, document):
        assert "hunter" not in done.stdout + done.stderr
    assert "http://***@127.0.0.1:" in table.stdout and json.loads(document.stdout)["endpoint"].startswith(
        "http://***@127.0.0.1:"
    )
    with open_store(None) as store:
        stored = store.measurements_for(llm_endpoint_fingerprint("tiny-lm"))
    assert len(stored) == 2 and all(m.host.versions["endpoint"].endswith("/v1?api_key=***") for m in stored)
    assert all("hunter" not in json.dumps(m.host.versions) for m in stored)
    history = run_perdollar("history", columns=250)
    assert history.returncode == 0 and "hunter" not in history.stdout
    # an endpoint's rate is output tokens/s, and history says so
    assert "output tokens/s" in history.stdout and "samples/s" not in history.stdout


@pytest.mark.parametrize(
    ("url", "words"),
    [("http://127.0.0.1:99999/v1", "Port out of range"), ("http://[::1/v1", "Invalid IPv6 URL"),
     ("http://user:hunter2@:8000/v1", "has no host"), ("ftp://127.0.0.1/v1", "not an http(s) URL")],
)  # fmt: skip
def test_a_url_no_request_can_reach_is_one_line(url: str, words: str) -> None:
    done = run_perdollar("serve-bench", "--url", url, *BENCH, "--json", columns=250)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert words in lines[0] and "hunter2" not in lines[0]
