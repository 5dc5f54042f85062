"""A fleet over a synthetic day: replay, saving against the static peak, the short list's gap, wall time.

The day: a diurnal curve whose peak is 4× its trough (a cosine, trough at 04:00), with 70 %
short requests (300 tokens in, 100 out) and 30 % long ones (6,000 in, 600 out), for
llama-3.1-8b within TTFT p99 ≤ 2 s and TPOT p99 ≤ 50 ms, every cloud and market in the catalog.

Prints:
* the share of intervals whose replay meets the SLOs (target ≥ 99 %);
* the chosen fleet's saving against the best single-type fleet provisioned for the peak all day
  at the same target utilisation (target ≥ 30 %);
* the gap between the integer program on the short list and the program's proven lower bound
  over every candidate (target ≤ 10 %);
* the wall time of ``perdollar recommend … --load-curve`` over the full catalog, in a subprocess
  (target ≤ 30 s).

Run: ``PYTHONPATH=src python3 benchmarks/fleet_over_a_day.py``
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perdollar.ask.fleet_sizing import _options, answer_language_model_fleet
from perdollar.catalog import load as load_catalog
from perdollar.catalog.model import DEFAULT_INSTANCE_START_S
from perdollar.goals import ServingGoal, token_slo
from perdollar.price.fleet import FleetPolicy, mixed_fleet, single_type_fleet
from perdollar.question import LanguageModelSettings, Question
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.load_curve import RequestClass, parse_load_curve

TROUGH, PEAK = 10.0, 40.0
SHORT, LONG = RequestClass("short", 300, 100), RequestClass("long", 6000, 600)
SHARES = (0.7, 0.3)
TTFT_MS, TPOT_MS = 2000.0, 50.0
FULL_PROGRAM_SECONDS = 120.0


def day_csv() -> str:
    rows = ["hour,requests_per_second"]
    for hour in range(24):
        rise = (1 - math.cos(2 * math.pi * (hour - 4) / 24)) / 2
        rows.append(f"{hour},{TROUGH + (PEAK - TROUGH) * rise:.3f}")
    return "\n".join(rows) + "\n"


def main() -> None:
    catalog = load_catalog()
    curve = parse_load_curve(day_csv(), SHORT, "synthetic day").with_classes((SHORT, LONG), SHARES)
    goal = ServingGoal(qps=PEAK, objectives=token_slo(TTFT_MS, TPOT_MS))
    settings = LanguageModelSettings()
    question = Question("llama-3.1-8b", goal=goal, language_model=settings)
    policy = FleetPolicy()
    started = time.perf_counter()
    answer = answer_language_model_fleet(
        question, curve, catalog=catalog, policy=policy, requests_per_interval=4000
    )
    in_process = time.perf_counter() - started
    choice = answer.choice
    saving = 1 - choice.mixed.cost / choice.static_peak.cost
    print(f"candidates: {choice.candidates}, short list for the integer program: {choice.short_list}")
    parts = [o.label for o in choice.mixed.options]
    print(f"chosen fleet: ${answer.month_usd(choice.mixed):,.0f}/month; parts: {parts}")
    print(
        f"one type autoscaled: ${answer.month_usd(choice.autoscaled):,.0f}/month ({choice.autoscaled.name})"
    )
    print(f"static peak: ${answer.month_usd(choice.static_peak):,.0f}/month ({choice.static_peak.name})")
    print(f"spot share of the chosen fleet: {choice.mixed.spot_share(answer.durations):.0%}")
    print(
        f"replay: SLO met in {answer.slo_met_share():.1%} of {len(answer.replay)} intervals (target >= 99%)"
    )
    worst = max(answer.replay, key=lambda r: r.ttft_p99_ms / TTFT_MS)
    print(f"  worst interval: TTFT p99 {worst.ttft_p99_ms:.0f} ms, TPOT p99 {worst.tpot_p99_ms:.1f} ms")
    print(f"saving vs the best single-type static-peak fleet: {saving:.1%} (target >= 30%)")
    print(f"in-process answer (sizing, program, replay): {in_process:.1f} s")

    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    options = _options(arch, catalog, question, settings, curve, DEFAULT_INSTANCE_START_S)
    rates = [i.class_rates() for i in curve.intervals]
    durations = [i.duration_s for i in curve.intervals]
    started = time.perf_counter()
    for utilisation in (0.9, 1.0):  # the saving under other headroom, the same for both fleets
        looser = FleetPolicy(target_utilisation=utilisation)
        cheapest = {
            static: min(f.cost for o in options if (f := single_type_fleet(o, rates, durations, looser,
                                                                           static=static)))
            for static in (False, True)
        }  # fmt: skip
        saving_at = 1 - cheapest[False] / cheapest[True]
        print(f"  one type autoscaled at {utilisation:.0%} target utilisation: saving {saving_at:.1%} "
              f"vs the static peak at {utilisation:.0%}")  # fmt: skip
    everything = mixed_fleet(options, rates, durations, policy, time_limit_s=FULL_PROGRAM_SECONDS)
    full_s = time.perf_counter() - started
    assert everything is not None
    bound = everything.lower_bound if math.isfinite(everything.lower_bound) else everything.cost
    best_known = min(everything.cost, choice.mixed.cost)
    print(f"integer program over all {len(options)} candidates: ${everything.cost * 30:,.0f}/month found, "
          f"lower bound ${bound * 30:,.0f}/month, {full_s:.0f} s")  # fmt: skip
    print(f"gap of the short-list fleet to the best fleet found with every candidate: "
          f"{choice.mixed.cost / best_known - 1:.2%}; to the proven lower bound: "
          f"{choice.mixed.cost / bound - 1:.2%} (target <= 10%)")  # fmt: skip

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "day.csv"
        path.write_text(day_csv())
        command = [sys.executable, "-m", "perdollar", "recommend", "llama-3.1-8b", "--inference",
                   "--load-curve", str(path), "--input-tokens", "1500", "--output-tokens", "300",
                   "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--no-store", "--json"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "PERDOLLAR_HOME": folder}
        )
        wall = time.perf_counter() - started
    print(f"recommend --load-curve over the full catalog: exit {done.returncode}, {wall:.1f} s wall "
          "(target <= 30 s)")  # fmt: skip


if __name__ == "__main__":
    main()
