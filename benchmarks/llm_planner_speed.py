"""Time the LLM training planner over the whole bundled catalog (every instance type × node counts).

    python benchmarks/llm_planner_speed.py [MODEL ...]

Runs in an empty temporary perdollar home. Prints, per model, the seconds of a first search that
traces the layers (importing transformers for the first model), of one that reads the traces
back from disk (as a new process would), and of one with everything cached in memory; then the
rows, how many fit, and the three fastest clusters with their plans.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

NODE_COUNTS = (1, 2, 4)


def main(models: list[str]) -> None:
    os.environ["PERDOLLAR_HOME"] = tempfile.mkdtemp(prefix="perdollar-bench-")
    from perdollar import catalog
    from perdollar.predict.llm import device
    from perdollar.predict.llm.frame import llm_prediction_frame
    from perdollar.profile import llm_trace
    from perdollar.workload.llm import load_llm_workload

    cat = catalog.load()
    for name in models:
        workload = load_llm_workload(name)
        for label in ("traced", "from disk", "in memory"):
            if label == "from disk":
                for cached in (llm_trace._traced, llm_trace.layer_trace, device.micro_batch_times):
                    cached.cache_clear()
            start = time.perf_counter()
            frame = llm_prediction_frame(workload, cat, NODE_COUNTS)
            seconds = time.perf_counter() - start
            print(f"{name}: {label} {seconds:.2f} s for {len(frame)} rows, {int(frame['fits'].sum())} fit")
        best = frame[frame["fits"]].sort_values("tokens_per_second", ascending=False).head(3)
        for row in best.itertuples():
            rate = f"{row.tokens_per_second:,.0f} tokens/s"
            print(f"  {row.nodes} × {row.instance_type}: {rate} — {row.plan_text}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["llama-3.1-8b", "llama-3.1-70b"])
