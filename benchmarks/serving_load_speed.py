"""Time `perdollar predict LLM --inference` at a stated load, warm, against the same command without one.

    PYTHONPATH=src python3 benchmarks/serving_load_speed.py [REPEATS]

Runs the command line in this process (its imports and the catalog warm after a first call), each
case REPEATS times (default 5), and prints the median and worst seconds of each case with the
figures it gave: TTFT and TPOT p50/p99 and output tokens/s.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time

BASE = ("predict", "llama-3.1-8b", "--inference", "--accelerator", "H100", "--gpus", "1", "--json")
CASES = {
    "max load (no load stated)": ("--input-tokens", "20000", "--output-tokens", "2000"),
    "--concurrency 1": ("--input-tokens", "20000", "--output-tokens", "2000", "--concurrency", "1"),
    "--concurrency 8": ("--input-tokens", "20000", "--output-tokens", "2000", "--concurrency", "8"),
    "--concurrency 64": ("--input-tokens", "1000", "--output-tokens", "300", "--concurrency", "64"),
    "--concurrency 5000": ("--input-tokens", "1000", "--output-tokens", "300", "--concurrency", "5000"),
    "--rps 0.2": ("--input-tokens", "20000", "--output-tokens", "2000", "--rps", "0.2"),
    "--rps 12": ("--input-tokens", "1000", "--output-tokens", "300", "--rps", "12"),
}


def _run(args: tuple[str, ...]) -> dict:
    from perdollar.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(list(args))
    return json.loads(out.getvalue())


def _figures(doc: dict) -> str:
    if "ttft_p50_ms" not in doc:
        return f"TTFT {doc['ttft_ms']:.0f} ms alone · {doc['output_tokens_per_second']:.0f} output tokens/s"
    if doc["over_capacity"]:
        return f"over capacity ({doc['capacity_requests_per_second']:.3g} requests/s)"
    return (
        f"TTFT p50/p99 {doc['ttft_p50_ms']:.0f}/{doc['ttft_p99_ms']:.0f} ms · TPOT p50/p99 "
        f"{doc['tpot_p50_ms']:.1f}/{doc['tpot_p99_ms']:.1f} ms · "
        f"{doc['output_tokens_per_second']:.0f} output tokens/s"
    )


def main(repeats: int) -> None:
    os.environ["PERDOLLAR_HOME"] = tempfile.mkdtemp(prefix="perdollar-bench-")
    _run(BASE + CASES["max load (no load stated)"])  # imports and the catalog, once
    for label, extra in CASES.items():
        times, doc = [], {}
        for _ in range(repeats):
            start = time.perf_counter()
            doc = _run(BASE + extra)
            times.append(time.perf_counter() - start)
        spread = f"median {statistics.median(times):.3f} s, worst {max(times):.3f} s"
        print(f"{label:28} {spread} · {_figures(doc)}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
