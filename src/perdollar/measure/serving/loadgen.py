"""A bounded, self-stopping HTTP/1.1 load generator on raw asyncio sockets with keep-alive.

Two ways to load a server:

* :func:`open_loop` sends requests on a schedule (constant or Poisson arrivals at ``rate``) over
  a pool of keep-alive connections. Latency is measured from the *scheduled* send time, so a
  server that falls behind is charged for the requests it delays (no coordinated omission).
* :func:`closed_loop` keeps every connection busy back to back: the most a server (or this
  client) can do.

Both stop after a fixed number of requests or a deadline, whichever comes first, and only talk
to loopback addresses. Responses are parsed just enough (status line, Content-Length) to know
where each ends; anything else (chunked bodies, a closed connection) counts as an error.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import statistics
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import cast

from perdollar.errors import PerdollarError
from perdollar.measure.steady import percentile

MAX_REQUESTS = 2_000_000
MIN_REQUESTS = 10
_HEADER_END = b"\r\n\r\n"
_LENGTH = b"content-length:"


class _Connection(asyncio.Protocol):
    """One keep-alive connection with at most one request in flight."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        end = self.buffer.find(_HEADER_END)
        if end < 0:
            return
        header = bytes(self.buffer[:end]).lower()
        at = header.find(_LENGTH)
        if at < 0:
            waiter.set_exception(ConnectionError("response without Content-Length"))
            return
        line_end = header.find(b"\r\n", at)
        length = int(header[at + len(_LENGTH) : line_end if line_end >= 0 else None])
        total = end + 4 + length
        if len(self.buffer) < total:
            return
        status = int(self.buffer[9:12])
        del self.buffer[:total]
        self.waiter = None
        waiter.set_result(status)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc or ConnectionError("server closed the connection"))

    def request(self, raw: bytes) -> asyncio.Future[int]:
        if self.closed or self.transport is None:
            raise ConnectionError("connection closed")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(raw)
        return self.waiter


def build_request(host: str, port: int, path: str, method: str = "GET", body: bytes = b"") -> bytes:
    head = f"{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: keep-alive\r\n"
    if method != "GET" or body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode("ascii") + b"\r\n" + body


def check_loopback(host: str) -> None:
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        raise PerdollarError(
            f"load target {host!r} is not a loopback address",
            "the load generator only tests servers on this machine (127.0.0.1)",
        )


@dataclass(frozen=True, slots=True)
class LoadResult:
    """What one load step saw: offered vs achieved rate and latency percentiles (ms)."""

    offered_rps: float | None  # None for closed loop
    achieved_rps: float
    requests: int  # completed with any status
    errors: int  # connection failures, non-2xx, unfinished at the deadline
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    max_ms: float
    duration_s: float
    connections: int
    late_fraction: float = 0.0  # requests sent more than 1 ms after their schedule (open loop)
    scheduled_rps: float | None = None  # the rate the random schedule actually offered (open loop)

    @property
    def error_fraction(self) -> float:
        total = self.requests + (self.errors if self.requests == 0 else 0)
        return self.errors / total if total else 0.0


def _summary(
    latencies: list[float], errors: int, elapsed: float, connections: int, offered: float | None, late: int
) -> LoadResult:
    done = len(latencies)
    figures = [percentile(latencies, q) * 1e3 for q in (50, 90, 95, 99)] if latencies else [float("nan")] * 4
    return LoadResult(
        offered_rps=offered,
        achieved_rps=done / elapsed if elapsed > 0 else 0.0,
        requests=done + errors,
        errors=errors,
        p50_ms=figures[0],
        p90_ms=figures[1],
        p95_ms=figures[2],
        p99_ms=figures[3],
        mean_ms=statistics.fmean(latencies) * 1e3 if latencies else float("nan"),
        max_ms=max(latencies) * 1e3 if latencies else float("nan"),
        duration_s=elapsed,
        connections=connections,
        late_fraction=late / (done + errors) if done + errors else 0.0,
    )


async def _connect(host: str, port: int, count: int) -> list[_Connection]:
    loop = asyncio.get_running_loop()
    pairs = await asyncio.gather(*(loop.create_connection(_Connection, host, port) for _ in range(count)))
    return [protocol for _, protocol in pairs]


def _close(connections: Sequence[_Connection]) -> None:
    for connection in connections:
        if connection.transport is not None:
            connection.transport.close()


async def _open_loop(
    host: str,
    port: int,
    raw: bytes,
    rate: float,
    requests: int,
    connections: int,
    deadline_s: float,
    poisson: bool,
    seed: int,
) -> LoadResult:
    pool = await _connect(host, port, connections)
    rng = random.Random(seed)
    offsets, clock = [], 0.0
    for _ in range(requests):
        offsets.append(clock)
        clock += rng.expovariate(rate) if poisson else 1.0 / rate
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    counters = {"next": 0, "errors": 0, "late": 0}
    start = loop.time() + 0.01
    stop_at = start + deadline_s

    async def worker(connection: _Connection) -> None:
        while counters["next"] < requests:
            index = counters["next"]
            counters["next"] += 1
            scheduled = start + offsets[index]
            if scheduled > stop_at:
                counters["errors"] += requests - index  # never sent before the deadline
                counters["next"] = requests
                return
            delay = scheduled - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            elif delay < -1e-3:
                counters["late"] += 1
            if not await _timed_request(connection, raw, scheduled, latencies, counters):
                return

    # One watchdog instead of a timeout per request: at the deadline every connection closes,
    # which fails the requests still in flight.
    watchdog = loop.call_at(stop_at, _close, pool)
    try:
        await asyncio.gather(*(worker(c) for c in pool))
    finally:
        watchdog.cancel()
        _close(pool)
    # The (random) schedule spans ``span`` seconds; a server that keeps up finishes right after it.
    span = offsets[-1] + 1.0 / rate
    elapsed = max(loop.time() - start, span)
    result = _summary(latencies, counters["errors"], elapsed, connections, rate, counters["late"])
    return replace(result, scheduled_rps=requests / span)


async def _timed_request(
    connection: _Connection, raw: bytes, since: float, latencies: list[float], counters: dict[str, int]
) -> bool:
    """Send one request; a 2xx adds its latency counted from ``since``, anything else an error.
    False when the connection broke, so its worker stops."""
    try:
        status = await connection.request(raw)
    except (ConnectionError, OSError):
        counters["errors"] += 1
        return False
    if 200 <= status < 300:
        latencies.append(asyncio.get_running_loop().time() - since)
    else:
        counters["errors"] += 1
    return True


async def _closed_loop(
    host: str, port: int, raw: bytes, requests: int, connections: int, duration_s: float, grace_s: float
) -> LoadResult:
    pool = await _connect(host, port, connections)
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    counters = {"next": 0, "errors": 0}
    start = loop.time()
    stop_at = start + duration_s

    async def worker(connection: _Connection) -> None:
        # Every connection sends at least once: on a starved machine the loop may first run a
        # worker after ``stop_at``, and a window with no request measures nothing.
        first = True
        while counters["next"] < requests and (first or loop.time() < stop_at):
            first = False
            counters["next"] += 1
            sent = loop.time()
            if not await _timed_request(connection, raw, sent, latencies, counters):
                return

    watchdog = loop.call_at(stop_at + grace_s, _close, pool)
    try:
        await asyncio.gather(*(worker(c) for c in pool))
    finally:
        watchdog.cancel()
        _close(pool)
    return _summary(latencies, counters["errors"], max(loop.time() - start, 1e-9), connections, None, 0)


def _run(coroutine: Coroutine[object, object, LoadResult]) -> LoadResult:
    """Run on uvloop when it is installed (a faster event loop), else on asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    return uvloop.run(coroutine)


def open_loop(
    host: str,
    port: int,
    *,
    rate: float,
    duration_s: float,
    path: str = "/predict",
    method: str = "POST",
    body: bytes = b"{}",
    connections: int = 64,
    poisson: bool = True,
    seed: int = 0,
    grace_s: float = 5.0,
) -> LoadResult:
    """Offer ``rate`` requests/s for ``duration_s`` (bounded: at most rate × duration requests)."""
    check_loopback(host)
    if rate <= 0 or duration_s <= 0:
        raise PerdollarError(
            "rate and duration must be positive", "give e.g. --rates 10,100 and --step-seconds 2"
        )
    # At least a few requests per step, so a low rate still gives a percentile worth printing.
    requests = max(MIN_REQUESTS, min(int(rate * duration_s), MAX_REQUESTS))
    duration_s = max(duration_s, requests / rate)
    raw = build_request(host, port, path, method, body)
    return _run(_open_loop(host, port, raw, rate, requests, connections, duration_s + grace_s, poisson, seed))


def closed_loop(
    host: str,
    port: int,
    *,
    duration_s: float,
    connections: int = 64,
    path: str = "/noop",
    method: str = "GET",
    body: bytes = b"",
    max_requests: int = MAX_REQUESTS,
    grace_s: float = 5.0,
) -> LoadResult:
    """Every connection sends its next request as soon as the previous answer arrives."""
    check_loopback(host)
    raw = build_request(host, port, path, method, body)
    return _run(_closed_loop(host, port, raw, max_requests, connections, duration_s, grace_s))
