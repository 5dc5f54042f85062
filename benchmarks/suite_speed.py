"""How long the test suite takes: the README's test command, then the slow set, as CI runs them.

    python benchmarks/suite_speed.py [--slowest 10] [-- EXTRA PYTEST ARGS]

Runs, as ``.ci/run`` does and each with a JUnit report: ``python -m pytest`` (the fast set, in
parallel on every core), the slow set, and alone the tests that time real training (``-m
exclusive -n 0``). Prints each run's wall time and counts (passed, failed, skipped), the slowest
tests of all three, and how many fast-set tests took over 30 s (each should be marked slow or
made faster).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNS = {
    "fast set (README's test command)": [],
    "slow set": ["--slow", "-m", "slow and not exclusive"],
    "exclusive (alone)": ["--slow", "-m", "exclusive", "-n", "0"],
}


def _cases(report: Path) -> list[tuple[str, float, str]]:
    """(test id, seconds, outcome) of every test case in a JUnit report."""
    cases = []
    for case in ElementTree.parse(report).iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        cases.append((name, float(case.get("time") or 0.0), outcome))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--slowest", type=int, default=10, help="how many of the slowest tests to list")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    every: list[tuple[str, float, str]] = []
    total = 0.0
    for label, options in RUNS.items():
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "junit.xml"
            begin = time.perf_counter()
            command = [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *options, *args.extra]
            done = subprocess.run(command, cwd=REPO, stdout=subprocess.DEVNULL, check=False)
            wall = time.perf_counter() - begin
            cases = _cases(report) if report.exists() else []
        total += wall
        outcomes = [outcome for *_, outcome in cases]
        counts = {o: outcomes.count(o) for o in ("passed", "failure", "error", "skipped")}
        print(f"{label}: {wall / 60:.1f} min wall, exit {done.returncode}; {counts['passed']} passed, "
              f"{counts['failure'] + counts['error']} failed, {counts['skipped']} skipped")  # fmt: skip
        ran = [c for c in cases if c[2] != "skipped"]
        if not options:
            over = [c for c in ran if c[1] > 30]
            print(f"  fast-set tests over 30 s: {len(over)}")
        every += ran
    print(f"both: {total / 60:.1f} min wall")
    print(f"the {args.slowest} slowest tests:")
    for name, seconds, _ in sorted(every, key=lambda c: -c[1])[: args.slowest]:
        print(f"  {seconds:7.1f} s  {name}")


if __name__ == "__main__":
    main()
