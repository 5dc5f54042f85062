"""What searching context parallelism buys and costs the LLM training planner on long sequences.

    python benchmarks/llm_context_parallel_search.py [MODEL] [SEQ_LEN] [GLOBAL_BATCH]

Runs in an empty temporary perdollar home, over the whole bundled catalog at 1, 2, 4 and 8 hosts,
with nothing kept on disk. Each search is run twice in one process, without context parallelism
(its sequence-length threshold set out of reach) and with it; after a first pass that traces the
layers, the seconds of each are printed with the rows that fit, the rows whose best plan splits
the sequence, those that fit only with it, the median and largest gain in tokens/s over the rows
that fit both ways, and the three fastest clusters with their plans.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

NODE_COUNTS = (1, 2, 4, 8)


def main(model: str, seq_len: int, global_batch: int) -> None:
    os.environ["PERDOLLAR_HOME"] = tempfile.mkdtemp(prefix="perdollar-bench-")
    from perdollar import catalog
    from perdollar.predict.llm import context_search
    from perdollar.predict.llm.frame import llm_prediction_frame
    from perdollar.workload.llm import load_llm_workload

    cat = catalog.load()
    workload = load_llm_workload(model, seq_len=seq_len, global_batch=global_batch)
    threshold = context_search.CONTEXT_PARALLEL_MIN_SEQ_LEN
    frames = {}
    passes = (("first pass (traces)", threshold), ("without CP", sys.maxsize), ("with CP", threshold))
    for label, minimum in passes:
        context_search.CONTEXT_PARALLEL_MIN_SEQ_LEN = minimum
        start = time.perf_counter()
        frame = llm_prediction_frame(workload, cat, NODE_COUNTS, keep=False)
        seconds = time.perf_counter() - start
        frames[label] = frame
        print(f"{model} at {seq_len} tokens: {label} {seconds:.2f} s for {len(frame)} rows, "
              f"{int(frame['fits'].sum())} fit")  # fmt: skip
    context_search.CONTEXT_PARALLEL_MIN_SEQ_LEN = threshold
    before, after = frames["without CP"], frames["with CP"]
    fits_before = before["fits"].fillna(False).astype(bool)
    fits_after = after["fits"].fillna(False).astype(bool)
    split = after["plan"].map(lambda plan: plan is not None and plan.context_parallel > 1) & fits_after
    only = fits_after & ~fits_before
    both = fits_after & fits_before
    gains = (after.loc[both, "tokens_per_second"] / before.loc[both, "tokens_per_second"] - 1).tolist()
    print(f"best plan splits the sequence on {int(split.sum())} rows; fit only with CP: {int(only.sum())}")
    if gains:
        median, largest = statistics.median(gains), max(gains)
        print(f"tokens/s gain where both fit: median {median:.1%}, largest {largest:.1%}")
    best = after[fits_after].sort_values("tokens_per_second", ascending=False).head(3)
    for row in best.itertuples():
        rate = f"{row.tokens_per_second:,.0f} tokens/s"
        print(f"  {row.nodes} × {row.instance_type}: {rate} — {row.plan.token()}")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    main(
        arguments[0] if arguments else "llama-3.1-70b",
        int(arguments[1]) if len(arguments) > 1 else 131_072,
        int(arguments[2]) if len(arguments) > 2 else 32,
    )
