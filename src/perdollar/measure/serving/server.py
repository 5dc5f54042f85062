"""Run the model server on loopback in its own process, and manage that process from outside.

``python -m perdollar.measure.serving.server READY_FILE [--workload W --batch-size N …]`` loads
the workload, warms it up, binds 127.0.0.1 on a free port, writes ``{"port": …}`` to READY_FILE
and serves with uvicorn until stopped or until ``--max-seconds`` pass (a server left behind
stops itself).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from perdollar.sandbox import UserCodeFailed, ended_without_result, mark_sandboxed

LOOPBACK = "127.0.0.1"
DEFAULT_MAX_SECONDS = 900.0
WARMUP_PASSES = 20


def _model_runner(
    workload: str, batch_size: int | None, precision: str | None, device: str
) -> tuple[Callable[[], object], int, str, float]:
    from perdollar.measure.modes import build_runner, device_sync, resolve_device
    from perdollar.workload import load_workload

    resolved = resolve_device(device)
    spec = load_workload(workload, batch_size=batch_size, precision=precision, kind="inference")
    runner = build_runner(spec, resolved)
    inputs = runner.make_batch()
    sync = device_sync(resolved)

    def run_batch() -> None:
        runner.run(inputs)
        sync()

    passes = []
    for _ in range(WARMUP_PASSES):
        start = time.perf_counter()
        run_batch()
        passes.append(time.perf_counter() - start)
    # The in-process forward time, so the HTTP figures can be compared with it.
    forward_ms = statistics.median(passes[WARMUP_PASSES // 2 :]) * 1e3
    return run_batch, spec.batch_size, spec.name, forward_ms


def _start_failure(
    process: subprocess.Popen[bytes], log_path: Path, start_timeout_s: float, workload: str | None
) -> UserCodeFailed:
    """Why the server never said it was listening: the workload's failure, as a result."""
    what = f"starting the model server for {workload or 'the no-op endpoint'}"
    if process.returncode is None:
        return UserCodeFailed("timeout", what, f"not listening within {start_timeout_s:g} s")
    text = log_path.read_text(encoding="utf-8", errors="replace")
    status, reason = ended_without_result(process.returncode, text)
    if process.returncode == 1 and text.strip():
        status, reason = "error", text.strip().splitlines()[-1][:300]
    return UserCodeFailed(status, what, reason)


def serve(
    ready_file: Path,
    *,
    workload: str | None,
    batch_size: int | None,
    precision: str | None,
    device: str,
    max_seconds: float,
) -> None:
    import uvicorn

    from perdollar.measure.serving.app import ModelServerApp

    run_batch, size, name, forward_ms = (
        (None, 1, "", 0.0) if workload is None else _model_runner(workload, batch_size, precision, device)
    )
    app = ModelServerApp(run_batch, batch_size=size, workload_name=name)
    # proto=IPPROTO_TCP lets asyncio set TCP_NODELAY on accepted sockets; without it a response
    # written in two parts waits for a delayed ACK (about 40 ms per request).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((LOOPBACK, 0))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30, backlog=2048
    )
    server = uvicorn.Server(config)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(max_seconds, lambda: setattr(server, "should_exit", True))
        serving = asyncio.create_task(server.serve(sockets=[sock]))
        while not server.started and not serving.done():
            await asyncio.sleep(0.01)
        temporary = ready_file.with_suffix(".partial")
        temporary.write_text(
            json.dumps(
                {
                    "port": sock.getsockname()[1],
                    "pid": os.getpid(),
                    "batch_size": size,
                    "workload": name,
                    "forward_ms": forward_ms,
                }
            ),
            encoding="utf-8",
        )
        os.replace(temporary, ready_file)
        await serving

    try:
        asyncio.run(main())
    finally:
        app.close()


@dataclass(frozen=True)
class RunningServer:
    host: str
    port: int
    batch_size: int
    workload: str
    pid: int
    forward_ms: float = 0.0  # in-process forward pass at the server's batch (median of warm-up)


@contextlib.contextmanager
def running_server(
    workload: str | None = None,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    device: str = "cpu",
    start_timeout_s: float = 120.0,
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> Iterator[RunningServer]:
    """Start the server process, wait until it listens, yield where; always stop it after."""
    from perdollar.lifeline import child_preexec, scratch_folder

    with scratch_folder("perdollar-serve-") as folder:
        ready = Path(folder) / "ready.json"
        log_path = Path(folder) / "server.log"
        command = [
            sys.executable,
            "-m",
            "perdollar.measure.serving.server",
            str(ready),
            "--device",
            device,
            "--max-seconds",
            str(max_seconds),
        ]
        if workload is not None:
            command += ["--workload", workload]
        if batch_size is not None:
            command += ["--batch-size", str(batch_size)]
        if precision is not None:
            command += ["--precision", precision]
        with log_path.open("w", encoding="utf-8") as log:
            process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=child_preexec()
            )
        try:
            deadline = time.monotonic() + start_timeout_s
            while not ready.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise _start_failure(process, log_path, start_timeout_s, workload)
                time.sleep(0.05)
            info = json.loads(ready.read_text(encoding="utf-8"))
            yield RunningServer(
                LOOPBACK,
                int(info["port"]),
                int(info["batch_size"]),
                str(info["workload"]),
                process.pid,
                float(info.get("forward_ms", 0.0)),
            )
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m perdollar.measure.serving.server")
    parser.add_argument("ready_file", type=Path)
    parser.add_argument("--workload")
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--precision")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-seconds", type=float, default=DEFAULT_MAX_SECONDS)
    args = parser.parse_args(argv)
    mark_sandboxed()
    serve(
        args.ready_file,
        workload=args.workload,
        batch_size=args.batch_size,
        precision=args.precision,
        device=args.device,
        max_seconds=args.max_seconds,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
