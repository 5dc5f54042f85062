"""Non-GPU language-model stacks against their vendors' published tables, each source held out.

    PYTHONPATH=src python3 benchmarks/nongpu_llm_accuracy.py

Training rows (MaxText on TPU v5e/v5p/v6e, NxD/NeMo on Trainium) fit one achieved share of the
bf16 peak per stack; decode rows (Neuron on Inferentia2 and Trainium, batch 1) fit one bandwidth
fraction and one per-step time. Each row is predicted by the fit of every *other* source
(leave-one-source-out); the error is |predicted / published - 1|, printed per chip.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from pathlib import Path

from perdollar.catalog import load
from perdollar.predict.accelerator_stacks import fit_decode, fit_fraction, model_flops_per_token

ROWS = Path(__file__).with_name("published_nongpu_llm.csv")
TRAINING_METRICS = ("model_tflops_per_chip", "tokens_per_s_per_chip", "sequences_per_s")


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


def ideal_decode_s(row: dict[str, str], bandwidth_gbps: float) -> float:
    """Seconds to stream the 16-bit weights once over the replica's chips at the datasheet rate."""
    return float(row["params_b"]) * 1e9 * 2.0 / (float(row["chips"]) * bandwidth_gbps * 1e9)


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
    decode = [r for r in rows if r["metric"] == "decode_ms_per_token"]
    pairs = {id(r): (ideal_decode_s(r, catalog.accelerators[r["chip"]].memory_bandwidth_gbps),
                     float(r["value"]) / 1e3) for r in decode}  # fmt: skip
    bandwidth, step = fit_decode(pairs.values())
    fits["nxd-inference"] = f"decode bandwidth fraction {bandwidth:.3f}, step {step * 1e3:.2f} ms"
    for source in sorted({(r["source_url"], r["source_version"]) for r in decode}):
        held_rows = [r for r in decode if (r["source_url"], r["source_version"]) == source]
        others = [pairs[id(r)] for r in decode if r not in held_rows]
        fraction, seconds = fit_decode(others)
        for r in held_rows:
            ideal, measured = pairs[id(r)]
            errors[f"{r['chip']} decode (nxd-inference)"].append(
                abs((ideal / fraction + seconds) / measured - 1.0)
            )
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
