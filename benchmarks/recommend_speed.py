"""How long `recommend` takes over the whole bundled catalog, after profiling.

    python benchmarks/recommend_speed.py [WORKLOAD] [--max-nodes 8] [--repeat 5]

All clouds, all regions, both markets, node counts 1, 2, 4, 8: prediction of every
(instance type, node count), pricing of every offer × node count (spot model and P(deadline)
included), ranking, Pareto front and explanation. Prints the median and the spread of the
repeats, and how many candidates were priced.
"""

from __future__ import annotations

import argparse
import statistics
import time

from perdollar.ask import answer_training, load_inputs, priced_candidates
from perdollar.question import Question


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workload", nargs="?", default="vit-b16")
    parser.add_argument("--max-nodes", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    question = Question(
        workload_name=args.workload, target_samples=1e9, deadline_hours=72.0, max_nodes=args.max_nodes
    )
    started = time.perf_counter()
    inputs = load_inputs(question)
    loaded = time.perf_counter()
    print(f"catalog load and profile of {args.workload}: {loaded - started:.2f} s (not in the figures below)")

    timings = []
    for _ in range(args.repeat):
        begin = time.perf_counter()
        recommendation = answer_training(question, inputs)
        timings.append(time.perf_counter() - begin)
    candidates = len(priced_candidates(question, inputs))
    spread = statistics.stdev(timings) if len(timings) > 1 else 0.0
    print(
        f"recommend {args.workload}, all clouds/regions/markets, nodes ≤ {args.max_nodes}: "
        f"{candidates:,} candidates priced"
    )
    print(
        f"  median {statistics.median(timings):.3f} s ± {spread:.3f} s over {args.repeat} runs "
        f"(min {min(timings):.3f} s, max {max(timings):.3f} s)"
    )
    print(f"  top choice: {recommendation.estimates[0].label}")


if __name__ == "__main__":
    main()
