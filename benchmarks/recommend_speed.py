"""How long `recommend` takes over the whole bundled catalog, after profiling.

    python benchmarks/recommend_speed.py [WORKLOAD] [--max-nodes 8] [--repeat 5]
    python benchmarks/recommend_speed.py --commands [--repeat 3] [--baseline-src OTHER/src] [--bytecode]
    python benchmarks/recommend_speed.py --commands --serving [--repeat 3]

With --commands: the README's main question and the language-model one as whole commands in
fresh processes, cold (an empty data directory and cache folder: nothing kept yet) and warm (the
same folders again), with the wall time and the CPU time (user + system) of each run; the CPU time
says how much of a wall time a busy machine added. With --baseline-src the same runs are made,
each right after this checkout's, with another checkout's source (say, before a change), so
both see the same load. --serving times the language-model serving question with every engine
weighed (`recommend llama-3.1-8b --inference --engine any --rps 5 …`, SLOs on both latencies)
instead.

Python writes no bytecode caches when PYTHONDONTWRITEBYTECODE is set
(then every run compiles perdollar's modules again); --bytecode lets it write them, as an
installed package has them.

All clouds, all regions, both markets, node counts 1, 2, 4, 8: prediction of every
(instance type, node count), pricing of every offer × node count (spot model and P(deadline)
included), ranking, Pareto front and explanation. Prints the median and the spread of the
repeats, and how many candidates were priced.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perdollar.ask import answer_training, load_inputs, priced_candidates
from perdollar.goals import TrainingGoal
from perdollar.question import Question


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("workload", nargs="?", default="vit-b16")
    parser.add_argument("--max-nodes", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--commands", action="store_true", help="time whole commands, cold and warm")
    parser.add_argument("--baseline-src", help="with --commands: also time this source folder's perdollar")
    parser.add_argument("--bytecode", action="store_true", help="with --commands: let Python keep bytecode")
    parser.add_argument("--serving", action="store_true", help="with --commands: time serving")
    args = parser.parse_args()
    if args.commands:
        sources = {"this checkout": str(Path(__file__).resolve().parents[1] / "src")}
        if args.baseline_src:
            sources["baseline"] = str(Path(args.baseline_src).resolve())
        commands = SERVING_COMMANDS if args.serving else COMMANDS
        time_commands(args.repeat, sources, commands, bytecode=args.bytecode)
        return

    question = Question(
        workload_name=args.workload,
        goal=TrainingGoal(target_samples=1e9, deadline_hours=72.0),
        max_nodes=args.max_nodes,
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


COMMANDS = (
    ("recommend", "vit-b16", "--samples", "1e9", "--deadline", "72h", "--no-store", "--json"),
    ("recommend", "llama-3.1-8b", "--tokens", "2e10", "--no-store", "--json"),
)
SERVING_COMMANDS = (
    ("recommend", "llama-3.1-8b", "--inference", "--engine", "any", "--rps", "5", "--input-tokens", "2000",
     "--output-tokens", "500", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "40", "--no-store", "--json"),
)  # fmt: skip


def _run(command: tuple[str, ...], home: str, source: str, bytecode: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one `perdollar COMMAND` from ``source`` in a fresh interpreter."""
    # The cache folder beside the data folder: a cold run finds neither.
    env = {**os.environ, "PERDOLLAR_HOME": home, "PERDOLLAR_CACHE": f"{home}/cache", "PYTHONPATH": source}
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    begin = time.perf_counter()
    command_line = [sys.executable, "-m", "perdollar", *command]
    subprocess.run(command_line, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - begin
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_commands(
    repeat: int, sources: dict[str, str], commands: tuple[tuple[str, ...], ...], *, bytecode: bool
) -> None:
    writes = bytecode or not os.environ.get("PYTHONDONTWRITEBYTECODE")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
          f"bytecode caches {'written and read' if writes else 'off (every run compiles)'}")  # fmt: skip
    for command in commands:
        runs: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for _ in range(repeat):
            for name, source in sources.items():
                with tempfile.TemporaryDirectory(prefix="perdollar-speed-") as home:
                    runs.setdefault((name, "cold"), []).append(_run(command, home, source, bytecode))
                    runs.setdefault((name, "warm"), []).append(_run(command, home, source, bytecode))
        print(f"perdollar {' '.join(command)}")
        for (name, label), timings in runs.items():
            walls = ", ".join(f"{w:.2f}" for w, _ in timings)
            cpus = ", ".join(f"{c:.2f}" for _, c in timings)
            wall = statistics.median(w for w, _ in timings)
            cpu = statistics.median(c for _, c in timings)
            print(f"  {name}, {label}: wall {walls} s (median {wall:.2f} s);", end="")
            print(f" CPU {cpus} s (median {cpu:.2f} s)")


if __name__ == "__main__":
    main()
