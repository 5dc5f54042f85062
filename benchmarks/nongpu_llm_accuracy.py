"""Non-GPU language-model stacks against their vendors' published tables, each source held out.

    PYTHONPATH=src python3 benchmarks/nongpu_llm_accuracy.py

Training rows (MaxText on TPU v5e/v5p/v6e, NxD/NeMo on Trainium) fit one achieved share of the
bf16 peak per stack; decode rows fit one bandwidth fraction and one per-step time per serving stack:
Neuron on Inferentia2 and Trainium at batch 1 (milliseconds per token), JetStream on TPU v5e at
full batch (output tokens per second of one replica, so one step is batch / value seconds, and the
step streams the weights plus the batch's KV cache at the row's mean context). Each row is
predicted by the fit of every *other* source of its stack (leave-one-source-out); the error is
|predicted / published - 1|, printed per chip.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from perdollar.catalog import load
from perdollar.predict.accelerator_stacks import (
    fit_decode,
    fit_fraction,
    ideal_decode_step_s,
    model_flops_per_token,
)

ROWS = Path(__file__).with_name("published_nongpu_llm.csv")
TRAINING_METRICS = ("model_tflops_per_chip", "tokens_per_s_per_chip", "sequences_per_s")
DECODE_METRICS = ("decode_ms_per_token", "decode_tokens_per_s")


def achieved_fraction(row: dict[str, str], peak_tflops: float) -> float:
    """The row's model FLOPs per chip over the chip's bf16 peak."""
    value = float(row["value"])
    if row["metric"] == "model_tflops_per_chip":
        return value / peak_tflops
    per_token = model_flops_per_token(
        float(row["params_b"]) * 1e9, float(row["layers"] or 0), float(row["hidden"] or 0),
        float(row["seq_len"]),
    )  # fmt: skip
    tokens_per_chip = value if row["metric"] == "tokens_per_s_per_chip" else (
        value * float(row["seq_len"]) / float(row["chips"]))  # fmt: skip
    return tokens_per_chip * per_token / (peak_tflops * 1e12)


def decode_pair(row: dict[str, str], bandwidth_gbps: float) -> tuple[float, float]:
    """(ideal streaming seconds, measured seconds) of one decode step of the row's replica.

    Batch-1 latency rows stream the weights only (their KV cache is a few per cent of it)."""
    params, chips = float(row["params_b"]) * 1e9, int(row["chips"])
    if row["metric"] == "decode_ms_per_token":
        return ideal_decode_step_s(params, chips, bandwidth_gbps), float(row["value"]) / 1e3
    batch = int(row["batch"])
    ideal = ideal_decode_step_s(params, chips, bandwidth_gbps, batch=batch, context=float(row["seq_len"]),
                                kv_bytes_per_token=float(row["kv_bytes_per_token"]))  # fmt: skip
    return ideal, batch / float(row["value"])


def main() -> None:
    catalog = load()
    rows = list(csv.DictReader(ROWS.open()))
    errors: dict[str, list[float]] = defaultdict(list)
    fits: dict[str, str] = {}
    training = [r for r in rows if r["metric"] in TRAINING_METRICS]
    for stack in sorted({r["stack"] for r in training}):
        mine = [r for r in training if r["stack"] == stack]
        fraction = {
            id(r): achieved_fraction(r, catalog.accelerators[r["chip"]].peak_bf16_tflops or 0) for r in mine
        }
        fits[stack] = f"model-FLOPs share of bf16 peak {fit_fraction(fraction.values()):.3f}"
        for source in sorted({r["source_url"] for r in mine}):
            others = [fraction[id(r)] for r in mine if r["source_url"] != source]
            if not others:
                continue
            held = fit_fraction(others)
            for r in (r for r in mine if r["source_url"] == source):
                errors[f"{r['chip']} training ({stack})"].append(abs(held / fraction[id(r)] - 1.0))
    decode = [r for r in rows if r["metric"] in DECODE_METRICS]
    for stack in sorted({r["stack"] for r in decode}):
        mine = [r for r in decode if r["stack"] == stack]
        pairs = {id(r): decode_pair(r, catalog.accelerators[r["chip"]].memory_bandwidth_gbps) for r in mine}
        bandwidth, step = fit_decode(pairs.values())
        fits[stack] = f"decode bandwidth fraction {bandwidth:.3f}, step {step * 1e3:.2f} ms"
        for source in sorted({(r["source_url"], r["source_version"]) for r in mine}):
            held_rows = [r for r in mine if (r["source_url"], r["source_version"]) == source]
            others = [pairs[id(r)] for r in mine if r not in held_rows]
            if not others:
                continue
            fraction, seconds = fit_decode(others)
            for r in held_rows:
                ideal, measured = pairs[id(r)]
                predicted = ideal / fraction + seconds
                errors[f"{r['chip']} decode ({stack})"].append(abs(predicted / measured - 1.0))
    print("fits on every row:")
    for name, text in fits.items():
        print(f"  {name}: {text}")
    print("leave-one-source-out error (|predicted/published - 1|):")
    everything: list[float] = []
    for key in sorted(errors):
        values = errors[key]
        everything += values
        print(
            f"  {key:38s} rows {len(values):2d}  median {statistics.median(values):6.1%}"
            f"  max {max(values):6.1%}"
        )
    print(f"  {'all':38s} rows {len(everything):2d}  median {statistics.median(everything):6.1%}")


if __name__ == "__main__":
    main()
