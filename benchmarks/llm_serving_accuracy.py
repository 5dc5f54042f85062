"""How close the LLM serving model comes to published serving figures, each GPU held out of the fit.

    python3 benchmarks/llm_serving_accuracy.py SHARED_DATA_DIR

The development set's LLM rows (llama.cpp batch-1 decode and prompt processing; TensorRT-LLM
in-flight batching at maximum load, static batches and time to first token) are predicted by
perdollar.predict.llm_serving. Each engine has its own few efficiency parameters (llama.cpp's
kernels are not TensorRT-LLM's); for every GPU they are refitted on the other GPUs' rows of that
engine only and the held-out GPU's rows are predicted with them. Beside them: the shipped
parameters (fitted on every row, so in sample) and the plain roofline (datasheet peaks, no
efficiency, no overhead). Errors are |predicted / published − 1|.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.efficiency import ENGINE_EFFICIENCY, fit_start
from perdollar.predict.llm_serving.published import (
    KINDS,
    PLAIN_ROOFLINE,
    ServingCase,
    errors,
    fit_efficiency,
    held_out_errors,
    load_cases,
)

LABELS = {
    "max-throughput": "max-throughput output tokens/s (in-flight batching)",
    "static-batch": "static-batch output tokens/s",
    "decode-batch-1": "batch-1 decode tokens/s",
    "prefill": "prompt processing tokens/s (batch 1)",
    "ttft": "TTFT ms (batch 1)",
}


def _line(label: str, values: Sequence[float]) -> str:
    if not values:
        return f"  {label:<30} n=0"
    within = sum(v <= 0.10 for v in values) / len(values)
    eightieth = statistics.quantiles(values, n=10)[7] if len(values) > 1 else values[0]
    return (
        f"  {label:<30} n={len(values):<4} median {100 * statistics.median(values):5.1f}%  "
        f"mean {100 * statistics.fmean(values):5.1f}%  80th pct {100 * eightieth:5.1f}%  "
        f"within 10% {100 * within:4.0f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="the shared data folder (measurements/published_dev.csv)")
    args = parser.parse_args()
    csv = args.data_dir / "measurements" / "published_dev.csv"
    if not csv.is_file():
        parser.error(f"{csv} does not exist")
    started = time.perf_counter()
    catalog = catalog_mod.load()
    cases, left = load_cases(csv, catalog)
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cases}}
    fits: list[str] = []
    for engine in sorted({case.engine for case in cases}):
        rows = [case for case in cases if case.engine == engine]
        for gpu in sorted({case.gpu for case in rows}):
            fitted = fit_efficiency([c for c in rows if c.gpu != gpu], chips, fit_start(engine))
            fits.append(
                f"  {engine:<13} without {gpu:<16} bandwidth {fitted.bandwidth:.3f}  weight-only "
                f"{fitted.weight_only_bandwidth:.3f}  compute {fitted.compute:.3f}  "
                f"KV {fitted.kv_bandwidth:.2f}  "
                f"overhead {1e6 * fitted.step_overhead_s_per_layer:.0f} µs/layer  "
                f"all-reduce {fitted.allreduce_bandwidth:.2f}  "
                f"in flight {fitted.bytes_per_sm_cycle:.1f} B/SM-cycle"
            )
    held_out = held_out_errors(cases, chips)
    print(
        f"{len(cases)} LLM rows of {csv.name} "
        f"({', '.join(f'{n} {k}' for k, n in left.items() if n)} left out)"
    )
    print("Parameters fitted without each GPU:")
    print("\n".join(fits))
    for kind in KINDS:
        subset: list[ServingCase] = [c for c in cases if c.kind == kind]
        if not subset:  # kinds of the other engines' files (benchmarks/llm_serving_engines_accuracy.py)
            continue
        gpus = len({c.gpu for c in subset})
        print(f"\n{LABELS[kind]} — {len(subset)} rows on {gpus} GPUs")
        print(_line("held out (leave one GPU out)", held_out[kind]))
        shipped = [e for c in subset for e in errors([c], chips, ENGINE_EFFICIENCY[c.engine])]
        print(_line("shipped parameters (in sample)", shipped))
        print(_line("plain roofline", errors(subset, chips, PLAIN_ROOFLINE)))
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
