"""How many requests/s the load generator sustains against a no-op endpoint on this machine.

Three figures, each from a fresh server process on 127.0.0.1:

1. closed loop against a bare asyncio no-op server (a fixed response, no HTTP framework): the
   load generator's own ceiling — the server here costs little per request;
2. closed loop against the project's model server (uvicorn + the app's raw ``/noop`` path): what
   the real server's HTTP layer can answer;
3. open loop at a fixed offered rate (default 5,000/s) against the bare server: whether the
   generator keeps its schedule (achieved rate, share of requests sent late).

Client CPU seconds per request are printed too, since on a small machine the client and the
server share the cores. Run: ``python benchmarks/loadgen_capacity.py [--seconds 3] [--rate 5000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import resource
import socket
import sys

from perdollar.measure.serving.loadgen import LoadResult, closed_loop, open_loop
from perdollar.measure.serving.server import running_server

_RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


class _NoOp(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.pending = b""

    def data_received(self, data: bytes) -> None:
        # GET requests without bodies: one response per header block, pipelining included.
        self.pending += data
        count = self.pending.count(b"\r\n\r\n")
        if count:
            self.pending = self.pending[self.pending.rfind(b"\r\n\r\n") + 4 :]
            self.transport.write(_RESPONSE * count)  # type: ignore[attr-defined]


def _bare_server(sock: socket.socket, seconds: float) -> None:
    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_NoOp, sock=sock)
        await asyncio.sleep(seconds)
        server.close()

    try:
        import uvloop
    except ImportError:
        asyncio.run(main())
    else:
        uvloop.run(main())


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _line(label: str, result: LoadResult, cpu: float) -> str:
    per_request = cpu / max(result.requests, 1) * 1e6
    late = f", {result.late_fraction:.1%} sent late" if result.offered_rps else ""
    offered = f"offered {result.offered_rps:,.0f}/s, " if result.offered_rps else ""
    return (
        f"{label}: {offered}achieved {result.achieved_rps:,.0f} requests/s "
        f"over {result.duration_s:.2g} s ({result.requests:,} requests, {result.errors} errors, "
        f"{result.connections} connections), P50 {result.p50_ms:.3g} ms, P99 {result.p99_ms:.3g} ms; "
        f"client CPU {per_request:.0f} µs/request (= {1e6 / max(per_request, 1e-9):,.0f} requests/s "
        f"per busy core){late}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rate", type=float, default=5000.0)
    parser.add_argument("--connections", type=int, default=64)
    args = parser.parse_args(argv)
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    port = sock.getsockname()[1]
    context = multiprocessing.get_context("fork")
    bare = context.Process(target=_bare_server, args=(sock, 3 * args.seconds + 10), daemon=True)
    bare.start()
    try:
        before = _cpu_seconds()
        result = closed_loop("127.0.0.1", port, duration_s=args.seconds, connections=args.connections)
        print(_line("closed loop vs bare asyncio no-op server", result, _cpu_seconds() - before))
        before = _cpu_seconds()
        result = open_loop(
            "127.0.0.1",
            port,
            rate=args.rate,
            duration_s=args.seconds,
            path="/noop",
            method="GET",
            body=b"",
            connections=args.connections,
        )
        print(_line("open loop vs bare asyncio no-op server", result, _cpu_seconds() - before))
    finally:
        bare.terminate()
        bare.join(5)
    with running_server(None) as server:
        before = _cpu_seconds()
        result = closed_loop(server.host, server.port, duration_s=args.seconds, connections=args.connections)
        print(_line("closed loop vs uvicorn model server /noop", result, _cpu_seconds() - before))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
