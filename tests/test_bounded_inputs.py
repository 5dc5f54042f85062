"""Small hostile inputs cost a bounded amount and end in one line: the files a user names (devices,
pipes, files over their limit), and traffic too short, too long or too busy to size a fleet on."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
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
