"""Write the traces shipped with the package: every built-in language model at its default
sequence length, micro-batch 1 and 2, amp-bf16, base weights trained and frozen.

    python -m perdollar.profile.llm_trace_bundle [--out src/perdollar/profile/data/llm_traces.json.gz]

Run it again when the tracer, a bundled config or the trace schema changes; traces of other
shapes are made on first use and kept in the user's data directory.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from importlib import metadata
from pathlib import Path

from perdollar.profile import llm_trace, llm_trace_store
from perdollar.workload.llm.workload import llm_reference_names, load_llm_workload

DEFAULT_OUT = Path(__file__).with_name("data") / "llm_traces.json.gz"


def shipped_traces() -> dict[str, dict[str, object]]:
    traces: dict[str, dict[str, object]] = {}
    for name in llm_reference_names():
        workload = load_llm_workload(name)
        for train_base in (True, False):
            for micro_batch in (1, 2):
                started = time.perf_counter()
                arch, seq = workload.architecture, workload.seq_len
                trace = llm_trace._trace_layers(arch, micro_batch, seq, "amp-bf16", train_base)
                key = llm_trace_store.shipped_key(arch, micro_batch, seq, "amp-bf16", train_base)
                traces[key] = llm_trace_store.as_document(trace)
                base = "trained" if train_base else "frozen "
                seconds = time.perf_counter() - started
                print(f"{name:<16} seq {seq:>5} micro-batch {micro_batch} base {base}  {seconds:5.1f} s")
    return traces


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    traces = shipped_traces()
    document = {
        "made_with": {package: metadata.version(package) for package in ("torch", "transformers")},
        "traces": traces,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(gzip.compress(json.dumps(document, separators=(",", ":")).encode(), mtime=0))
    print(f"wrote {len(traces)} traces to {args.out} ({args.out.stat().st_size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
