"""Warm, in-process timings of the language-model serving questions.

    PYTHONPATH=src python3 benchmarks/serving_recommend_speed.py [--repeat 3] [--save DIR] [--check DIR]

Times, in this process after one untimed run of each (imports, the catalog and per-process caches
warm, as a long-lived caller has them):

* ``recommend llama-3.1-8b --inference --rps 20 …`` with SLOs on TTFT and TPOT (target ≤ 2 s);
* ``recommend llama-3.1-8b --inference --load-curve day.csv …`` over the whole catalog, the day of
  ``fleet_over_a_day.py`` (target ≤ 10 s);
* ``predict llama-3.1-8b --inference … --concurrency 8`` on one H100 (target ≤ 2 s).

Prints the median wall time and every run of each, and the median CPU time of this process (all
its threads): on a shared machine the CPU time says how much of a wall time other work added.
``--save DIR`` writes each command's ``--json`` answer there; ``--check DIR`` compares today's
answers with the saved ones (every key but the time they were made), so a change that should only
be faster can be shown to give the same answers.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_over_a_day import day_csv

_CLOCK_KEYS = ("created_at", "price_age_days")
SLOS = ("--ttft-p99-ms", "1000", "--tpot-p99-ms", "50")


def commands(curve: Path) -> dict[str, tuple[str, ...]]:
    return {
        "recommend --rps 20": ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens",
                               "1000", "--output-tokens", "300", *SLOS, "--no-store", "--json"),
        "recommend --load-curve day.csv": ("recommend", "llama-3.1-8b", "--inference", "--load-curve",
                                           str(curve), "--input-tokens", "1500", "--output-tokens", "300",
                                           "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--no-store",
                                           "--json"),
        "predict --concurrency 8": ("predict", "llama-3.1-8b", "--inference", "--accelerator", "H100",
                                    "--gpus", "1", "--input-tokens", "20000", "--output-tokens", "2000",
                                    "--concurrency", "8", "--json"),
    }  # fmt: skip


def _answer(arguments: tuple[str, ...]) -> dict[str, Any]:
    from perdollar.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(list(arguments))
    return json.loads(out.getvalue())


def _without_clock(document: Any) -> Any:
    """The answer less what depends on when it was asked."""
    if isinstance(document, dict):
        return {
            k: _without_clock(v) for k, v in document.items() if k not in ("created_at", "price_age_days")
        }
    if isinstance(document, list):
        return [_without_clock(v) for v in document]
    return document


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--save", type=Path, help="write each answer's --json document here")
    parser.add_argument("--check", type=Path, help="compare each answer with the one saved here")
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="perdollar-bench-"))
    os.environ["PERDOLLAR_HOME"] = str(home)
    curve = home / "day.csv"
    curve.write_text(day_csv())
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.repeat} warm runs each")
    for label, arguments in commands(curve).items():
        answer = _answer(arguments)  # the first run warms imports and caches
        timings, cpu = [], []
        for _ in range(args.repeat):
            begin, begin_cpu = time.perf_counter(), time.process_time()
            answer = _answer(arguments)
            timings.append(time.perf_counter() - begin)
            cpu.append(time.process_time() - begin_cpu)
        runs = ", ".join(f"{t:.2f}" for t in timings)
        print(f"{label:32} median {statistics.median(timings):6.2f} s wall (runs {runs} s), "
              f"{statistics.median(cpu):.2f} s CPU")  # fmt: skip
        name = label.replace(" ", "_").replace("-", "").replace(".", "_") + ".json"
        if args.save:
            args.save.mkdir(parents=True, exist_ok=True)
            (args.save / name).write_text(json.dumps(_without_clock(answer), indent=1, sort_keys=True))
        if args.check:
            saved = json.loads((args.check / name).read_text())
            same = saved == json.loads(json.dumps(_without_clock(answer)))
            print(f"{'':32} answer {'unchanged' if same else 'CHANGED'} against {args.check / name}")


if __name__ == "__main__":
    main()
