"""Energy and carbon: the power model, energy from an NVML power series, the carbon objective."""

from __future__ import annotations

import csv
import json
import statistics
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.measure.power import PowerRecorder, PowerTrace, energy_joules, power_summary
from perdollar.measure.system import SystemSampler
from perdollar.price.energy import accelerator_watts
from perdollar.select.objectives import scores

SERIES = Path(__file__).parent / "data" / "nvml_power_series.csv"


def _series() -> list[dict[str, float]]:
    with SERIES.open() as handle:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def _fake_pynvml(rows: list[dict[str, float]]) -> types.ModuleType:
    """A stand-in for NVML that replays the series: each board's reading advances on each call."""
    module = types.ModuleType("pynvml")
    calls = {0: 0, 1: 0}

    def power(handle: int) -> float:
        row = rows[min(calls[handle], len(rows) - 1)]
        calls[handle] += 1
        return row[f"board{handle}_mw"]

    module.nvmlInit = lambda: None  # type: ignore[attr-defined]
    module.nvmlDeviceGetCount = lambda: 2  # type: ignore[attr-defined]
    module.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    module.nvmlDeviceGetPowerUsage = power  # type: ignore[attr-defined]
    return module


def test_energy_of_the_replayed_series_is_its_trapezoid_integral() -> None:
    rows = _series()
    nvml = _fake_pynvml(rows)
    recorder = PowerRecorder(nvml, [0, 1])
    for row in rows:
        recorder.record(row["t_s"])
    trace = recorder.trace
    watts = [(r["board0_mw"] + r["board1_mw"]) / 1000 for r in rows]
    times = [r["t_s"] for r in rows]
    by_hand = sum((times[i + 1] - times[i]) * (watts[i] + watts[i + 1]) / 2 for i in range(len(rows) - 1))
    assert energy_joules(trace) == pytest.approx(by_hand)
    summary = power_summary(trace, step_time_s=0.2)
    assert summary["mean_power_w"] == pytest.approx(by_hand / 1.5, rel=1e-4)
    assert summary["energy_per_step_j"] == pytest.approx(by_hand / 1.5 * 0.2, rel=1e-4)


RECORDED = Path(__file__).parent / "data" / "nvml_power_trace_h200.csv"


def test_a_trace_recorded_on_an_h200_integrates_to_the_drivers_energy_counter() -> None:
    """benchmarks/gpu_power_trace.py recorded NVML every 20 ms while an H200 idled, decoded and
    prefilled; the recorder replaying those readings must give the energy the driver counted."""
    with RECORDED.open() as handle:
        rows = list(csv.DictReader(handle))
    module = types.ModuleType("pynvml")
    readings = iter(float(row["board0_mw"]) for row in rows)
    module.nvmlDeviceGetPowerUsage = lambda handle: next(readings)  # type: ignore[attr-defined]
    recorder = PowerRecorder(module, [0])
    for row in rows:
        recorder.record(float(row["t_s"]))
    counted = (float(rows[-1]["energy_counter_mj"]) - float(rows[0]["energy_counter_mj"])) / 1000
    assert energy_joules(recorder.trace) == pytest.approx(counted, rel=0.03)
    by_phase = {
        phase: [float(r["board0_mw"]) / 1000 for r in rows if r["phase"] == phase]
        for phase in ("decode", "prefill")
    }
    # Prefill holds the board near its 700 W limit; decode at batch 64 draws less on average.
    assert statistics.median(by_phase["prefill"]) > statistics.median(by_phase["decode"])


def test_no_readings_give_no_energy() -> None:
    assert power_summary(PowerTrace(), step_time_s=0.1) == {}


def test_the_system_sampler_records_power_through_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _series()
    module = _fake_pynvml(rows)
    for name in ("nvmlDeviceGetUtilizationRates", "nvmlDeviceGetMemoryInfo", "nvmlDeviceGetClockInfo"):
        setattr(module, name, lambda *a: (_ for _ in ()).throw(RuntimeError("unsupported")))
    monkeypatch.setitem(sys.modules, "pynvml", module)
    with SystemSampler(interval_s=0.01) as sampler:
        while len(sampler.power_trace.watts) < 3:
            pass
    trace = sampler.power_trace
    totals = [(r["board0_mw"] + r["board1_mw"]) / 1000 for r in rows]
    assert list(trace.watts[:3]) == totals[:3]
    assert min(totals) <= power_summary(trace, 0.1)["mean_power_w"] <= max(totals)


def test_accelerator_draw_runs_from_idle_to_tdp() -> None:
    tdp = np.array([700.0, 700.0, 400.0])
    drawn = accelerator_watts(tdp, np.array([1.0, 0.0, 0.5]), idle_fraction=0.11)
    assert drawn == pytest.approx([700.0, 77.0, 400 * (0.11 + 0.89 * 0.5)])


def test_carbon_objective_scores_by_emissions() -> None:
    frame = pd.DataFrame({
        "carbon_kg": [5.0, 1.0, 3.0], "carbon_kg_per_sample": [5e-9, 1e-9, 3e-9],
        "expected_time_hours": [1.0, 1.0, 1.0], "expected_time_hours_low": [1.0] * 3,
        "expected_time_hours_high": [1.0] * 3, "expected_cost_usd": [1.0] * 3,
        "expected_cost_usd_low": [1.0] * 3, "expected_cost_usd_high": [1.0] * 3,
    })  # fmt: skip
    assert list(np.argsort(scores(frame, "carbon", has_target=True).value)) == [1, 2, 0]


def test_recommend_by_carbon_ranks_by_kg_and_says_the_source_year() -> None:
    done = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--objective", "carbon", "--json",
                         "--no-store", "--top", "15")  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    feasible = [e for e in answer["estimates"] if not e["excluded_reason"]]
    carbon = [e["carbon_kg"] for e in feasible if e["carbon_kg"] is not None]
    assert len(carbon) >= 5 and carbon == sorted(carbon)
    assert all(e["energy_kwh"] > 0 and e["grid_carbon_year"] for e in feasible[:5])
    assert any("grid intensity" in note and "2024" in note for note in answer["notes"])
