"""Local latency curve of an inference workload: batch size × closed-loop concurrency.

For each batch size (1, 2, 4, …) and each concurrency (closed-loop clients, one thread each,
every client sends its next request as soon as the previous one returns) the sweep warms up
until request latencies settle, then times requests for a fixed duration and reports P50, P90,
P95, P99 and throughput. It stops early, as SageMaker Inference Recommender does, when
throughput stops growing (a plateau: more batch buys no more requests/s) or when latency crosses
a ceiling, and at the first batch size that runs out of memory.

The sweep runs in a child process (``python -m perdollar.measure.latency_worker SPEC RESULT``) so that
a workload that crashes, hangs or exhausts memory becomes a recorded result.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perdollar.lifeline import child_preexec, scratch_folder, termination_raises
from perdollar.measure.steady import find_steady_start, percentile
from perdollar.sandbox import ended_without_result

PROGRESS_PREFIX = "PERDOLLAR-LATENCY"
# Throughput growing by less than this from one batch size to the next is a plateau.
PLATEAU_GAIN = 0.05
PLATEAU_PATIENCE = 2  # consecutive flat batch sizes before the sweep stops
DEFAULT_CONCURRENCY = (1, 4)
DEFAULT_POINT_SECONDS = 1.0
MAX_WARMUP_SECONDS = 3.0
MAX_REQUESTS_PER_POINT = 200_000
# Without a ceiling from the user, a P99 beyond this means latency has exploded: stop there.
DEFAULT_P99_CEILING_MS = 5_000.0


@dataclass(frozen=True, slots=True)
class LatencyPoint:
    """Latency and throughput of one (batch size, concurrency) point, requests of one batch each."""

    batch_size: int
    concurrency: int
    requests: int
    p50_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    mean_ms: float
    min_ms: float
    requests_per_second: float
    samples_per_second: float
    status: str = "ok"  # ok | oom | error
    message: str = ""


@dataclass(frozen=True, slots=True)
class LatencyCurve:
    workload_name: str
    workload_fingerprint: str
    precision: str
    device: str
    points: tuple[LatencyPoint, ...]
    stop_reason: str
    status: str = "ok"  # ok | oom | error | timeout (of the whole sweep)
    message: str = ""
    warnings: tuple[str, ...] = field(default_factory=tuple)


def summarize_point(
    batch_size: int, concurrency: int, latencies_s: Sequence[float], elapsed_s: float
) -> LatencyPoint:
    """Percentiles (ms) and throughput of the requests timed at one point."""
    if not latencies_s or elapsed_s <= 0:
        raise ValueError("no timed requests")
    requests = len(latencies_s)
    rate = requests / elapsed_s
    return LatencyPoint(
        batch_size=batch_size,
        concurrency=concurrency,
        requests=requests,
        p50_ms=percentile(latencies_s, 50) * 1e3,
        p90_ms=percentile(latencies_s, 90) * 1e3,
        p95_ms=percentile(latencies_s, 95) * 1e3,
        p99_ms=percentile(latencies_s, 99) * 1e3,
        mean_ms=statistics.fmean(latencies_s) * 1e3,
        min_ms=min(latencies_s) * 1e3,
        requests_per_second=rate,
        samples_per_second=rate * batch_size,
    )


def is_plateau(previous: LatencyPoint | None, current: LatencyPoint, gain: float = PLATEAU_GAIN) -> bool:
    """Throughput (samples/s) grew by less than ``gain`` over the previous point."""
    return previous is not None and current.samples_per_second < previous.samples_per_second * (1 + gain)


def stop_reason(
    points: Sequence[LatencyPoint], *, p99_ceiling_ms: float | None, max_batch: int | None, next_batch: int
) -> str:
    """Why the batch sweep ends after ``points`` (the latest batch size's points), or ""."""
    last = points[-1]
    if last.status != "ok":
        return f"batch {last.batch_size}: {last.status} ({last.message[:120]})"
    if p99_ceiling_ms is not None and last.p99_ms > p99_ceiling_ms:
        return (
            f"P99 {last.p99_ms:.3g} ms at batch {last.batch_size} crossed the {p99_ceiling_ms:g} ms ceiling"
        )
    if max_batch is not None and next_batch > max_batch:
        return f"reached the largest batch asked for ({max_batch})"
    return ""


def closed_loop(
    run_once: Callable[[], object],
    concurrency: int,
    duration_s: float,
    max_requests: int = MAX_REQUESTS_PER_POINT,
) -> tuple[list[float], float]:
    """``concurrency`` clients calling ``run_once`` back to back for ``duration_s``; latencies (s)."""
    latencies: list[float] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    deadline = time.perf_counter() + duration_s

    def client() -> None:
        mine: list[float] = []
        try:
            while time.perf_counter() < deadline and len(mine) * concurrency < max_requests:
                start = time.perf_counter()
                run_once()
                mine.append(time.perf_counter() - start)
        except BaseException as error:  # reported after the other clients stop
            errors.append(error)
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise errors[0]
    return latencies, elapsed


def warm_up(run_once: Callable[[], object], max_seconds: float = MAX_WARMUP_SECONDS) -> bool:
    """Run requests until latencies settle (the harness's steady-state rule); True if they did."""
    latencies: list[float] = []
    deadline = time.perf_counter() + max_seconds
    while time.perf_counter() < deadline and len(latencies) < 10_000:
        start = time.perf_counter()
        run_once()
        latencies.append(time.perf_counter() - start)
        # Single requests are noisier than the harness's timed blocks: a 10 % band, not 5 %.
        if len(latencies) >= 15 and find_steady_start(latencies[-30:], window=5, tolerance=0.1) is not None:
            return True
    return False


def batch_ladder(start: int, max_batch: int | None) -> list[int]:
    """1, 2, 4, … up to ``max_batch`` (bounded at 4096 when none is given)."""
    limit = max_batch if max_batch is not None else 4096
    sizes, batch = [], max(start, 1)
    while batch <= limit:
        sizes.append(batch)
        batch *= 2
    return sizes


def sweep(
    make_runner: Callable[[int], Callable[[], object]],
    *,
    batch_sizes: Sequence[int],
    concurrency: Sequence[int],
    point_seconds: float,
    p99_ceiling_ms: float | None,
    max_batch: int | None,
    progress: Callable[[str, float], None] = lambda _p, _f: None,
) -> tuple[list[LatencyPoint], str, list[str]]:
    """The batch × concurrency sweep with early stopping; in-process (the child runs it)."""
    from perdollar.measure.worker import failure_payload

    points: list[LatencyPoint] = []
    warnings: list[str] = []
    previous_best: LatencyPoint | None = None
    flat_steps = 0
    for index, batch in enumerate(batch_sizes):
        progress(f"batch {batch}", index / max(len(batch_sizes), 1))
        batch_points: list[LatencyPoint] = []
        try:
            run_once = make_runner(batch)
            if not warm_up(run_once, max_seconds=min(MAX_WARMUP_SECONDS, max(0.5, point_seconds))):
                warnings.append(f"batch {batch}: latencies never settled during warm-up")
            for clients in concurrency:
                latencies, elapsed = closed_loop(run_once, clients, point_seconds)
                point = summarize_point(batch, clients, latencies, elapsed)
                plateau = is_plateau(batch_points[-1] if batch_points else None, point)
                batch_points.append(point)
                if plateau:  # more clients only queue behind each other
                    break
        except BaseException as error:  # the workload's failure ends the sweep as a result
            if isinstance(error, KeyboardInterrupt):
                raise
            failure = failure_payload(error)
            batch_points.append(
                LatencyPoint(
                    batch, 0, 0, *(float("nan"),) * 8, status=failure["status"], message=failure["message"]
                )
            )
        points.extend(batch_points)
        next_batch = batch_sizes[index + 1] if index + 1 < len(batch_sizes) else batch * 2
        reason = stop_reason(
            batch_points, p99_ceiling_ms=p99_ceiling_ms, max_batch=max_batch, next_batch=next_batch
        )
        if reason:
            return points, reason, warnings
        best = max(batch_points, key=lambda p: p.samples_per_second)
        if is_plateau(previous_best, best):
            flat_steps += 1
            # Two flat batch sizes in a row, so one noisy point does not end the sweep.
            if flat_steps >= PLATEAU_PATIENCE and previous_best is not None:
                return (
                    points,
                    (
                        f"throughput plateaued: batches up to {batch} gave under {PLATEAU_GAIN:.0%} "
                        f"more than batch {previous_best.batch_size} "
                        f"({previous_best.samples_per_second:.3g} samples/s)"
                    ),
                    warnings,
                )
            continue
        flat_steps = 0
        previous_best = best
    return points, "ran every batch size", warnings


def curve_from_dict(payload: dict[str, Any]) -> LatencyCurve:
    return LatencyCurve(
        workload_name=payload.get("workload_name", ""),
        workload_fingerprint=payload.get("workload_fingerprint", ""),
        precision=payload.get("precision", ""),
        device=payload.get("device", ""),
        points=tuple(LatencyPoint(**p) for p in payload.get("points", ())),
        stop_reason=payload.get("stop_reason", ""),
        status=payload.get("status", "ok"),
        message=payload.get("message", ""),
        warnings=tuple(payload.get("warnings", ())),
    )


def measure_latency_curve(
    workload: str,
    *,
    batch_size: int | None = None,
    precision: str | None = None,
    batch_sizes: Sequence[int] | None = None,
    max_batch: int | None = None,
    concurrency: Sequence[int] | None = None,
    point_seconds: float = DEFAULT_POINT_SECONDS,
    p99_ceiling_ms: float | None = None,
    device: str = "auto",
    timeout_s: float = 600.0,
    progress: Callable[[str, float], None] = lambda _p, _f: None,
) -> LatencyCurve:
    """Run the sweep in a child process; a crash, hang or OOM comes back as the curve's status."""
    spec = {
        "workload": workload,
        "batch_size": batch_size,
        "precision": precision,
        "batch_sizes": list(batch_sizes) if batch_sizes else None,
        "max_batch": max_batch,
        "concurrency": list(concurrency) if concurrency else None,
        "point_seconds": point_seconds,
        "p99_ceiling_ms": p99_ceiling_ms,
        "device": device,
    }
    with termination_raises(), scratch_folder("perdollar-latency-") as folder:
        spec_path, result_path = Path(folder) / "spec.json", Path(folder) / "result.json"
        spec_path.write_text(json.dumps(spec), encoding="utf-8")
        command = [sys.executable, "-m", "perdollar.measure.latency_worker", str(spec_path), str(result_path)]
        stderr_path = Path(folder) / "stderr.txt"
        stderr_file = stderr_path.open("w", encoding="utf-8")
        # stderr goes to a file: a chatty workload must not fill a pipe nobody reads.
        child = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=stderr_file, text=True, preexec_fn=child_preexec()
        )
        timer = threading.Timer(timeout_s, child.kill)
        timer.start()
        try:
            assert child.stdout is not None
            for line in child.stdout:
                parts = line.rstrip("\n").split(" ", 2)
                if len(parts) == 3 and parts[0] == PROGRESS_PREFIX:
                    try:  # a line the workload printed that merely looks like ours is not fatal
                        fraction = float(parts[1])
                    except ValueError:
                        continue
                    progress(parts[2], fraction)
            child.wait()
        finally:
            stderr_file.close()
            timed_out = not timer.is_alive() and child.returncode not in (0, 1)
            timer.cancel()
        stderr = stderr_path.read_text(encoding="utf-8", errors="replace")
        if result_path.exists():
            return curve_from_dict(json.loads(result_path.read_text(encoding="utf-8")))
    if timed_out:
        return curve_from_dict(
            {"status": "timeout", "message": f"no result within {timeout_s:g} s", "workload_name": workload}
        )
    from perdollar.measure.worker import classify_failure

    status, reason = ended_without_result(child.returncode, stderr)
    if status == "error":
        status = classify_failure(stderr)  # type: ignore[assignment]
    return curve_from_dict({"status": status, "message": reason[:800], "workload_name": workload})
