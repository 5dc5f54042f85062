"""Small hostile inputs cost a bounded amount and end in one line: the files a user names (devices,
pipes, files over their limit), traffic too short, too long or too busy to size a fleet on, and
the replies of a server under serve-bench (compression bombs, deep or malformed events, token
counts no completion can have)."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from llm_stream_server import replying_server
from perdollar.errors import PerdollarError
from perdollar.measure.serving.openai_load import LoadRun, LoadSettings, llm_endpoint_fingerprint, rising_load
from perdollar.measure.serving.reply import MAX_JSON_DEPTH, MAX_LINE_BYTES
from perdollar.store import open_store
from perdollar.workload.llm.load_curve import (
    LOAD_CURVE_MAX_BYTES,
    TRACE_MAX_REQUESTS,
    RequestClass,
    parse_load_curve,
    parse_trace,
)
from perdollar.workload.llm.request_lengths import MAX_REQUESTS, parse_request_lengths

FLEET = ("recommend", "llama-3.1-8b", "--inference", "--ttft-p99-ms", "800", "--tpot-p99-ms", "50",
         "--cloud", "aws", "--no-store")  # fmt: skip
SERVING = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--ttft-p99-ms", "500",
           "--tpot-p99-ms", "50", "--no-store")  # fmt: skip
TRAINING = ("recommend", "vit-b16", "--samples", "1e9", "--no-store")
TRACE_HEADER = "arrival_s,input_tokens,output_tokens\n"


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith("perdollar: error: ") and "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


# --- The files a user names ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "named"),
    [((*FLEET, "--load-curve"), "--load-curve"), ((*FLEET, "--trace"), "--trace"),
     ((*SERVING, "--lengths-file"), "--lengths-file"), ((*TRAINING, "--quotas"), "quotas file"),
     ((*TRAINING, "--measurements"), "--measurements")],
    ids=["load-curve", "trace", "lengths-file", "quotas", "measurements"],
)  # fmt: skip
def test_a_device_named_as_an_input_file_is_refused_as_one(question: tuple[str, ...], named: str) -> None:
    # /dev/null reads as empty; /dev/zero, which never ends, is refused by the same test of the kind of file.
    _one_line(run_perdollar(*question, "/dev/null"), f"{named} /dev/null is a device, not a regular file")


@contextlib.contextmanager
def _pipe_fed_with(path: Path, text: str) -> Iterator[None]:
    """A named pipe at ``path`` that a thread fills with ``text`` for whatever opens it to read (so
    a reader that does open it gets the text, as often as it opens it, instead of waiting for ever)."""
    os.mkfifo(path)
    done = threading.Event()

    def feed() -> None:
        while not done.is_set():
            try:
                handle = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # nobody reads it now
                time.sleep(0.01)
                continue
            with contextlib.suppress(OSError), os.fdopen(handle, "w") as stream:
                stream.write(text)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        yield
    finally:
        done.set()
        feeder.join(timeout=5)


def test_a_named_pipe_is_refused_before_it_is_opened(tmp_path: Path) -> None:
    pipe = tmp_path / "traffic.csv"
    with _pipe_fed_with(pipe, "hour,requests_per_second\n0,4\n12,8\n"):
        done = run_perdollar(*FLEET, "--load-curve", str(pipe))
    _one_line(done, "--load-curve", "is a named pipe, not a regular file", "save it to a file first")


def test_a_file_over_its_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    curve = tmp_path / "day.csv"
    # A valid curve, padded with blank lines past the limit: refused for its size, not its content.
    curve.write_text("hour,requests_per_second\n0,4\n12,8\n" + "\n" * LOAD_CURVE_MAX_BYTES)
    _one_line(
        run_perdollar(*FLEET, "--load-curve", str(curve)),
        "--load-curve",
        "more than the 16 MiB perdollar reads",
    )
    quotas = tmp_path / "quotas.csv"
    quotas.write_text("cloud,region,family,gpus\naws,*,p5,8\n" + "\n" * (16 * 2**20))
    _one_line(run_perdollar(*TRAINING, "--quotas", str(quotas)), "quotas file", "more than the 16 MiB")


def test_a_trace_or_lengths_file_of_more_requests_than_are_read_is_refused() -> None:
    trace = TRACE_HEADER + "".join(f"{i},10,5\n" for i in range(TRACE_MAX_REQUESTS + 1))
    with pytest.raises(
        PerdollarError, match=f"more than the {TRACE_MAX_REQUESTS:,} requests perdollar reads"
    ):
        parse_trace(trace)
    with pytest.raises(PerdollarError, match=f"more than the {MAX_REQUESTS:,} requests perdollar reads"):
        parse_request_lengths("7\n" * (MAX_REQUESTS + 2))  # one number a line: no header


# --- Traffic a fleet cannot be sized on ---------------------------------------------------------


def _trace(arrivals: list[float]) -> str:
    return TRACE_HEADER + "".join(f"{t!r},100,100\n" for t in arrivals)


@pytest.mark.parametrize(
    ("arrivals", "words"),
    [
        # 30 requests, the last 10^12 s later: 2.8·10^8 hourly intervals before.
        ([*range(29), 1e12], "spans 11,574,074 days, more than the 400"),
        ([i / 30_000 for i in range(30)], "spans 0.000967 s, less than the 60 s"),  # a $70,000 fleet before
        ([0.0, 3600.0], "has 2 requests, too few to have a rate"),
    ],
    ids=["too-long", "too-short", "too-sparse"],
)
def test_a_trace_too_long_short_or_sparse_to_have_a_rate_is_refused(
    arrivals: list[float], words: str
) -> None:
    with pytest.raises(PerdollarError, match=words) as refused:
        parse_trace(_trace(arrivals))
    assert "--load-curve" in (refused.value.fix or "")


def test_a_last_moment_past_the_hour_joins_the_hour_rather_than_being_a_burst() -> None:
    # A request every 30 s for an hour and one a millisecond past it: before, a last interval of
    # 1 ms at 1,000 requests/s.
    curve = parse_trace(_trace([30.0 * i for i in range(120)] + [3600.001]))
    assert [i.duration_s for i in curve.intervals] == [pytest.approx(3600.001)]
    assert curve.peak_rps == pytest.approx(121 / 3600.001)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("hour,requests_per_second\n", "has a header ('hour,requests_per_second') and no rows"),
        ("hour,requests_per_second\n0,1e300\n", "1e300 is more than the 1,000,000"),
        ('{"arrival_s": ' + "[" * 100_000 + "]" * 100_000 + "}\n", "nests its JSON too deeply"),
        ('{"arrival_s": ' + "1" * 5000 + "}\n", "line 1 is not a JSON object"),
    ],
    ids=["header-only", "absurd-rate", "deep-json", "huge-number"],
)
def test_a_load_curve_that_crashed_the_command_is_one_line(tmp_path: Path, text: str, words: str) -> None:
    curve = tmp_path / "day.csv"
    curve.write_text(text)
    _one_line(run_perdollar(*FLEET, "--load-curve", str(curve)), f"--load-curve {curve}", words)


def test_a_rate_beyond_a_million_requests_a_second_is_refused_and_one_below_reads() -> None:
    request = RequestClass("all", 100, 100)
    assert parse_load_curve("hour,requests_per_second\n0,1000000\n", request).peak_rps == 1e6
    with pytest.raises(PerdollarError, match="more than the 1,000,000"):
        parse_load_curve("hour,requests_per_second\n0,1000001\n", request)


def test_a_short_quotas_row_is_one_line(tmp_path: Path) -> None:
    quotas = tmp_path / "quotas.csv"
    quotas.write_text("cloud,region,family,gpus\naws,*,p5,8\naws,*\n")
    _one_line(run_perdollar(*TRAINING, "--quotas", str(quotas)), "row 3 has no family")


# --- Replies of a server under serve-bench --------------------------------------------------------


def _events(*events: str) -> bytes:
    return "".join(f"data: {event}\n\n" for event in (*events, "[DONE]")).encode()


def _reply(usage: str = '{"completion_tokens": 2}', choices: str = '[{"index": 0, "text": " t"}]') -> bytes:
    return _events(f'{{"choices": {choices}}}', f'{{"choices": [], "usage": {usage}}}')


def _packed(head: bytes, block: bytes, blocks: int, tail: bytes) -> bytes:
    """gzip of ``head``, ``blocks`` times ``block`` and ``tail``: a reply that inflates a
    thousandfold, packed a block at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [packer.compress(head), *(packer.compress(block) for _ in range(blocks)), packer.compress(tail)]
    return b"".join([*parts, packer.flush()])


def _one_line_bomb() -> bytes:
    """One event whose line inflates to 32 MiB."""
    return _packed(b'data: {"choices": [{"text": "', b"a" * 2**20, 32, b'"}]}\n\ndata: [DONE]\n\n')


def _large_bomb() -> bytes:
    """Events of a megabyte each, 70 MiB in all."""
    event = b'data: {"choices": [{"text": "' + b"a" * (2**20 - 64) + b'"}]}\n\n'
    return _packed(b"", event, 70, _reply())


def _many_lines() -> bytes:
    """A hundred thousand keep-alive comments (which a reader skips) before a completion of two tokens."""
    return b": keep-alive\n" * 100_000 + _reply()


def _run(
    body: bytes, headers: dict[str, str] | None = None, seconds: float = 2.0, requests: int = 3
) -> LoadRun:
    """One step of ``requests`` requests; ``seconds`` for the step and for a stall, long enough that
    a reply which takes a busy machine a while to inflate is refused inside the step, not cut off."""
    with replying_server(body, headers) as url:
        settings = LoadSettings(
            url=url, model="tiny", input_tokens=8, output_tokens=20, step_seconds=seconds,
            max_requests_per_step=requests, stall_s=seconds, request_timeout_s=30.0,
        )  # fmt: skip
        return rising_load(settings, [4.0])


@pytest.mark.parametrize(
    ("body", "headers", "reason"),
    [
        # Made when the test runs (the bomb takes a moment to pack), not when the tests are collected.
        (_one_line_bomb, {"content-encoding": "gzip"}, f"longer than {MAX_LINE_BYTES // 2**20} MiB"),
        (_large_bomb, {"content-encoding": "gzip"}, "more than 64 MiB decompressed"),
        (_many_lines, None, f"more than {8 * 20 + 1024:,} lines for 20 tokens asked"),
        (lambda: _reply(usage='{"completion_tokens": "lots"}'), None, "'lots' is not a count"),
        (lambda: _reply(choices='{"0": {"text": " t"}}'), None, "choices is an object, not a list"),
        (lambda: _events('{"choices": [{"text": "t"}], "x": ' + "[" * 100_000 + "]" * 100_000 + "}"), None,
         f"more than {MAX_JSON_DEPTH} levels deep"),
        (lambda: _events('{"choices": [{"text": "t"}], "x": ' + "[" * 40 + "]" * 40 + "}"), None,
         f"more than {MAX_JSON_DEPTH} levels deep"),
        (lambda: _reply(usage='{"completion_tokens": -5}'), None, "reports -5 output tokens"),
        (lambda: _reply(usage='{"completion_tokens": NaN}'), None, "nan is not a whole number"),
        (lambda: _reply(usage='{"completion_tokens": 0}'), None, "reports 0 output tokens"),
        (lambda: _reply(usage='{"completion_tokens": 1000000000000}'), None, "more than the 20 asked for"),
        (lambda: _events('{"choices": []}'), None, "the reply carries 0 output tokens"),
    ],
    ids=["gzip-line-bomb", "gzip-large-bomb", "many-lines", "tokens-text", "choices-object", "deep-json",
         "deeper-than-events", "negative", "nan", "zero", "more-than-asked", "no-token"],
)  # fmt: skip
def test_a_hostile_reply_fails_its_request_with_the_reason_and_the_run_goes_on(
    body: Callable[[], bytes], headers: dict[str, str] | None, reason: str
) -> None:
    # A bomb inflates 64 MiB before it is refused: two of them show the run going on past the first.
    bomb = headers is not None and headers.get("content-encoding") == "gzip"
    requests = 2 if bomb else 3
    step = _run(body(), headers, seconds=8.0 if bomb else 2.0, requests=requests).steps[0]
    assert step.sent == step.errors == requests and step.ok == 0
    assert all(reason in failure for failure in step.failures), step.failures


def test_a_reply_compressed_once_is_read_and_one_compressed_twice_is_refused() -> None:
    once = _run(gzip.compress(_reply()), {"content-encoding": "gzip"}).steps[0]
    assert once.ok == once.sent == 3 and once.output_tokens_per_second > 0
    twice = _run(gzip.compress(gzip.compress(_reply())), {"content-encoding": "gzip, gzip"}).steps[0]
    assert twice.errors == twice.sent == 3 and "compressed 2 times over" in twice.failures[0]


def test_a_run_whose_every_reply_reports_no_tokens_is_stored_as_failed_with_the_reason() -> None:
    with replying_server(_reply(usage='{"completion_tokens": 0}')) as url:
        done = run_perdollar("serve-bench", "--url", url, "--model", "Tiny-LM", "--rates", "4",
                             "--max-requests", "3", "--step-seconds", "2", "--output-tokens", "20",
                             "--stall-seconds", "2", "--json", columns=250)  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-1500:]
    assert json.loads(done.stdout)["status"] == "error"
    with open_store(None) as store:
        (stored,) = store.measurements_for(llm_endpoint_fingerprint("tiny-lm"), ok_only=False)
    assert stored.status == "error" and stored.samples_per_second is None
    assert "no request succeeded" in stored.message and "reports 0 output tokens" in stored.message
