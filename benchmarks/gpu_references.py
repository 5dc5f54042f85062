"""Predict every reference workload on this machine's GPU, then measure it, and compare the two.

    python3 benchmarks/gpu_references.py OUT_DIR
    python3 benchmarks/gpu_references.py OUT_DIR --workloads resnet50,bert-base --duration 30
    python3 benchmarks/gpu_references.py OUT_DIR --predict-only --gpu "NVIDIA H100 80GB HBM3"

The predictions (spec basis: datasheet and fitted efficiencies, no measurement of the workload)
are written to OUT_DIR/predicted.csv before anything runs on the GPU. Then each workload is
measured by `perdollar bench` in its own process (training at its reference batch and precision;
with --inference, the latency curve at concurrency 1), and the GPU's clocks and power are logged
once a second. Written to OUT_DIR:

- predicted.csv   the predictions, with their 80% bands;
- measured.json   the training bench results (`perdollar predict W --instance I --measurements`);
- inference_curves.json  the latency curves of `perdollar bench --inference`;
- measured.csv    the training and inference rates in the published-measurement schema;
- compared.csv    prediction against measurement, one row per workload and batch;
- gpu_log.csv     nvidia-smi's clocks, power and temperature while the runs went.

A workload that fails, runs out of memory or hangs is a row with its status, not an abort.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TRAINING = "mlp,resnet50,resnet152,vgg16,inception-v3,vit-b16,bert-base,bert-large,gpt2,gnmt,ncf"
INFERENCE = "resnet50,bert-base,vit-b16"
PUBLISHED_COLUMNS = [
    *("source", "model", "task", "gpu", "gpu_count", "precision", "batch_size", "batch_scope"),
    *("seq_len", "throughput", "unit", "metric", "throughput_scope", "framework", "system"),
    *("flag", "notes", "file"),
]


def gpu_identity() -> dict[str, str]:
    """nvidia-smi's view of GPU 0; asking torch would initialise CUDA in this parent process."""
    fields = "name,driver_version,power.limit,clocks.max.sm,memory.total"
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[0]
    return dict(zip(fields.split(","), (v.strip() for v in out.split(",")), strict=True))


def predictions(gpu_name: str, training: list[str], inference: list[str], batches: list[int]) -> list[dict]:
    from perdollar import catalog
    from perdollar.predict import predict_step_time
    from perdollar.profile import profile_workload
    from perdollar.workload import load_workload

    accelerator = catalog.load().accelerator(gpu_name)
    jobs = [(name, "train", None) for name in training]
    jobs += [(name, "inference", batch) for name in inference for batch in batches]
    rows = []
    for name, kind, batch in jobs:
        spec = load_workload(name, batch_size=batch, kind="inference" if kind == "inference" else None)
        profile = profile_workload(spec)
        estimate = predict_step_time(profile, accelerator)
        rows.append(
            {
                "workload": name,
                "task": kind,
                "batch_size": profile.batch_size,
                "precision": profile.precision,
                "unit": f"{profile.sample_unit}/s",
                "accelerator_key": accelerator.key,
                "basis": estimate.basis,
                "bottleneck": estimate.bottleneck,
                "predicted": profile.batch_size / estimate.seconds,
                "predicted_low": profile.batch_size / estimate.high,
                "predicted_high": profile.batch_size / estimate.low,
            }
        )
        last = rows[-1]
        print(f"predicted {name} {kind} batch {profile.batch_size}: {last['predicted']:.4g} {last['unit']}")
    return rows


def bench(args: list[str], device: str, timeout_s: float) -> dict[str, Any]:
    command = [sys.executable, "-m", "perdollar", "bench", *args, "--json", "--no-store", "--device", device]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "message": f"no result within {timeout_s:.0f} s"}
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"status": "error", "message": " | ".join(tail)}


def measured_rates(result: dict[str, Any], task: str) -> list[dict[str, Any]]:
    """(batch, samples/s, spread) of one bench result; inference gives one row per batch (concurrency 1)."""
    if task == "train":
        rate = result.get("samples_per_second") or {}
        return [
            {
                "batch_size": result.get("batch_size"),
                "status": result.get("status", "error"),
                "measured": rate.get("median", math.nan),
                "measured_iqr": rate.get("iqr", math.nan),
                "message": result.get("message", ""),
            }
        ]
    curve = result.get("curve") or {}
    points = [p for p in curve.get("points", []) if p.get("concurrency") == 1]
    if not points:
        return [
            {
                "batch_size": None,
                "status": result.get("status", curve.get("status", "error")),
                "measured": math.nan,
                "measured_iqr": math.nan,
                "message": result.get("message", curve.get("message", "")),
            }
        ]
    return [
        {
            "batch_size": p["batch_size"],
            "status": p["status"],
            "measured": p["samples_per_second"],
            "measured_iqr": math.nan,
            "p50_ms": p["p50_ms"],
            "p99_ms": p["p99_ms"],
            "message": p["message"],
        }
        for p in points
    ]


def published_row(row: dict[str, Any], gpu: dict[str, str], software: str) -> dict[str, Any]:
    return {
        "source": f"perdollar benchmarks/gpu_references.py ({software})",
        "model": row["workload"],
        "task": row["task"],
        "gpu": row["accelerator_key"],
        "gpu_count": 1,
        "precision": row["precision"],
        "batch_size": row["batch_size"],
        "batch_scope": "per GPU",
        "seq_len": "",
        "throughput": f"{row['measured']:.6g}",
        "unit": row["unit"],
        "metric": "throughput" if row["task"] == "train" else "throughput at concurrency 1",
        "throughput_scope": "per GPU",
        "framework": software,
        "system": gpu["name"],
        "flag": "",
        "notes": f"driver {gpu['driver_version']}; power limit {gpu['power.limit']}; "
        f"max SM clock {gpu['clocks.max.sm']}; synthetic inputs reused on the GPU (cached-input)",
        "file": "measured.json" if row["task"] == "train" else "inference_curves.json",
    }


def write_csv(path: Path, rows: list[dict[str, Any]], columns: list[str] | None = None) -> None:
    columns = columns or sorted({key for row in rows for key in row})
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--workloads", default=TRAINING, help="training workloads, comma-separated")
    parser.add_argument("--inference", default=INFERENCE, help="workloads whose latency curve is measured")
    parser.add_argument("--inference-batches", default="1,2,4,8,16,32,64,128,256")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds per training run")
    parser.add_argument("--point-seconds", type=float, default=2.0, help="seconds per inference point")
    parser.add_argument("--device", default="cuda", help="device the runs use (cuda, cuda:N)")
    parser.add_argument("--predict-only", action="store_true")
    parser.add_argument("--gpu", help="predict for this GPU name instead of asking nvidia-smi")
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    training = [w for w in options.workloads.split(",") if w]
    inference = [w for w in options.inference.split(",") if w]
    batches = [int(b) for b in options.inference_batches.split(",")]

    from perdollar.errors import PerdollarError

    try:
        gpu = {"name": options.gpu} if options.gpu else gpu_identity()
        print(f"GPU: {gpu}")
        predicted = predictions(gpu["name"], training, inference, batches)
    except FileNotFoundError:
        parser.error("nvidia-smi not found: run on an NVIDIA GPU host, or add --predict-only --gpu NAME")
    except PerdollarError as error:
        parser.error(str(error))
    write_csv(options.out / "predicted.csv", predicted)
    if options.predict_only:
        return 0

    import torch

    software = f"PyTorch {torch.__version__}"
    log = subprocess.Popen(
        [
            "nvidia-smi",
            "--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu",
            *("--format=csv", "-l", "1"),
        ],
        stdout=(options.out / "gpu_log.csv").open("w"),
    )
    results: dict[str, list[dict[str, Any]]] = {"train": [], "inference": []}
    compared: list[dict[str, Any]] = []
    try:
        runs = [(w, "train", ["--duration", str(options.duration)]) for w in training]
        runs += [
            (
                w,
                "inference",
                [
                    "--inference",
                    "--concurrency",
                    "1",
                    "--max-batch",
                    str(max(batches)),
                    "--duration",
                    str(options.point_seconds),
                ],
            )
            for w in inference
        ]
        for name, task, extra in runs:
            began = time.monotonic()
            result = bench([name, *extra], options.device, timeout_s=4 * options.duration + 240)
            results[task].append(result)
            for rate in measured_rates(result, task):
                match = next(
                    (
                        p
                        for p in predicted
                        if p["workload"] == name
                        and p["task"] == task
                        and (task == "train" or p["batch_size"] == rate["batch_size"])
                    ),
                    None,
                )
                row = {**(match or {"workload": name, "task": task}), **rate}
                if match and rate["status"] == "ok":
                    row["error_pct"] = 100 * (match["predicted"] / rate["measured"] - 1)
                    row["in_band"] = match["predicted_low"] <= rate["measured"] <= match["predicted_high"]
                compared.append(row)
                print(
                    f"{name} {task} batch {row.get('batch_size')}: {rate['status']} measured "
                    f"{rate['measured']:.4g}, predicted {row.get('predicted', math.nan):.4g} "
                    f"({row.get('error_pct', math.nan):+.1f}%) [{time.monotonic() - began:.0f} s]",
                    flush=True,
                )
            for file_name, task_results in (
                ("measured.json", results["train"]),
                ("inference_curves.json", results["inference"]),
            ):
                (options.out / file_name).write_text(json.dumps(task_results, indent=1, default=str))
            write_csv(options.out / "compared.csv", compared)
            write_csv(
                options.out / "measured.csv",
                [
                    published_row(r, gpu, software)
                    for r in compared
                    if r.get("status") == "ok" and "predicted" in r
                ],
                PUBLISHED_COLUMNS,
            )
    finally:
        log.terminate()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
