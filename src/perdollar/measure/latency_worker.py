"""The child process of a latency sweep: load the workload here and sweep it (see latency.py)."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from perdollar.measure.latency import (
    DEFAULT_CONCURRENCY,
    DEFAULT_P99_CEILING_MS,
    DEFAULT_POINT_SECONDS,
    PROGRESS_PREFIX,
    batch_ladder,
    sweep,
)


def _child(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from perdollar.measure.modes import build_runner, device_sync, resolve_device
    from perdollar.workload import load_workload

    device = resolve_device(spec.get("device", "auto"))
    base = load_workload(
        spec["workload"], batch_size=spec.get("batch_size"), precision=spec.get("precision"), kind="inference"
    )
    sync = device_sync(device)
    torch.manual_seed(0)

    def make_runner(batch: int) -> Callable[[], object]:
        runner = build_runner(base.with_overrides(batch_size=batch), device)
        inputs = runner.make_batch()

        def run_once() -> None:
            runner.run(inputs)
            sync()

        return run_once

    def report(phase: str, fraction: float) -> None:
        print(f"{PROGRESS_PREFIX} {fraction:.3f} {phase}", flush=True)

    sizes = spec.get("batch_sizes") or batch_ladder(1, spec.get("max_batch"))
    points, reason, warnings = sweep(
        make_runner,
        batch_sizes=sizes,
        concurrency=spec.get("concurrency") or DEFAULT_CONCURRENCY,
        point_seconds=spec.get("point_seconds", DEFAULT_POINT_SECONDS),
        p99_ceiling_ms=spec.get("p99_ceiling_ms") or DEFAULT_P99_CEILING_MS,
        max_batch=spec.get("max_batch"),
        progress=report,
    )
    return {
        "status": "ok",
        "workload_name": base.name,
        # A curve covers every batch size: it is filed under the workload at batch 1.
        "workload_fingerprint": base.with_overrides(batch_size=1).fingerprint,
        "precision": base.precision,
        "device": device,
        "points": [asdict(p) for p in points],
        "stop_reason": reason,
        "warnings": warnings,
    }


def main(argv: list[str]) -> int:
    from perdollar.measure.worker import failure_payload
    from perdollar.sandbox import mark_sandboxed

    mark_sandboxed()
    spec_path, result_path = Path(argv[0]), Path(argv[1])
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    try:
        payload = _child(spec)
    except BaseException as error:  # the workload's failure is the result
        payload = {**failure_payload(error), "workload_name": spec.get("workload", "")}
    temporary = result_path.with_suffix(".partial")
    temporary.write_text(json.dumps(payload, allow_nan=True), encoding="utf-8")
    os.replace(temporary, result_path)
    return 0 if payload["status"] == "ok" else 1


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
