"""Which mode bounds a workload, and the bisection for the largest batch that fits."""

from __future__ import annotations

import dataclasses

import pytest

from perdollar.measure.bounds import bound_verdict, find_max_batch
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from perdollar.measure.serialize import measurement_from_dict, measurement_to_dict

HOST = HostFingerprint(
    cpu_model="test cpu",
    cpu_cores=2,
    memory_gib=8.0,
    accelerator=None,
    accelerator_key=None,
    accelerator_count=0,
    driver=None,
    instance_type="unknown",
    cloud=None,
    versions={"torch": "2"},
)


def _rate(median: float, spread: float = 0.01) -> Rate:
    return Rate(median=median, low=median * (1 - spread), high=median * (1 + spread), iqr=median * spread)


def test_full_run_well_below_the_ceiling_is_input_bound() -> None:
    verdict = bound_verdict({"cached-input": _rate(1000), "full": _rate(620), "data-only": _rate(640)})
    assert verdict.startswith("input-bound: 38% below the cached-input ceiling")
    assert "640 samples/s" in verdict


def test_full_run_at_the_ceiling_is_compute_bound() -> None:
    verdict = bound_verdict({"cached-input": _rate(1000), "full": _rate(985)})
    assert verdict.startswith("compute-bound")


def test_overlapping_intervals_do_not_give_a_verdict() -> None:
    verdict = bound_verdict({"cached-input": _rate(1000, 0.3), "full": _rate(800, 0.3)})
    assert verdict.startswith("unclear")


def test_data_only_alone_says_how_much_the_host_can_feed() -> None:
    assert bound_verdict({"cached-input": _rate(1000), "data-only": _rate(5000)}).startswith("compute-bound")
    assert bound_verdict({"cached-input": _rate(1000), "data-only": _rate(400)}).startswith("input-bound")
    assert bound_verdict({"full": _rate(400)}).startswith("no verdict")


def test_a_full_run_faster_than_the_ceiling_is_no_compute_bound_verdict() -> None:
    verdict = bound_verdict({"cached-input": _rate(340), "full": _rate(559), "data-only": _rate(458_435)})
    assert verdict.startswith("unclear: the full run is 64% above the cached-input ceiling")
    assert "559 samples/s" in verdict and "340 samples/s" in verdict


def test_a_full_run_at_the_ceiling_with_a_pipeline_too_slow_to_feed_it_is_unclear() -> None:
    verdict = bound_verdict({"cached-input": _rate(1000), "full": _rate(990), "data-only": _rate(400)})
    assert verdict.startswith("unclear") and "400 samples/s" in verdict


def test_an_input_bound_run_whose_pipeline_alone_is_fast_says_the_pipeline_is_not_overlapped() -> None:
    verdict = bound_verdict({"cached-input": _rate(294), "full": _rate(240), "data-only": _rate(241_800)})
    assert verdict.startswith("input-bound: 18% below the cached-input ceiling")
    # The figure as bench prints it, and what it means: the rate is not what limits the run.
    assert "241,800 samples/s" in verdict and "not its rate" in verdict


def test_a_pipeline_alone_within_the_noise_of_the_ceiling_is_no_compute_bound_verdict() -> None:
    verdict = bound_verdict({"cached-input": _rate(1000), "data-only": _rate(970)})
    assert verdict.startswith("unclear") and "970 samples/s" in verdict


def _measurement(status: str) -> Measurement:
    return Measurement(
        status=status,
        mode="cached-input",
        workload_name="w",
        workload_fingerprint="f" * 16,
        batch_size=1,
        precision="fp32",
        host=HOST,
        started_at="2026-01-01T00:00:00+00:00",
    )


@pytest.mark.parametrize(("start", "capacity"), [(8, 37), (64, 37), (1, 1), (16, 16), (3, 1000)])
def test_bisection_finds_the_largest_batch_that_fits(start: int, capacity: int) -> None:
    tried: list[int] = []

    def probe(batch: int) -> Measurement:
        tried.append(batch)
        return _measurement("ok" if batch <= capacity else "oom")

    result = find_max_batch("anything", start=start, probe=probe, limit=4096)
    assert result.largest_fitting == capacity
    assert result.smallest_failing == capacity + 1
    assert len(tried) == len(set(tried)), "no batch is probed twice"
    assert len(tried) <= 2 * 12


def test_bisection_reports_when_nothing_fits_or_everything_fits() -> None:
    nothing = find_max_batch("w", start=8, probe=lambda batch: _measurement("oom"))
    assert nothing.largest_fitting is None and "batch 1" in nothing.message
    everything = find_max_batch("w", start=8, limit=64, probe=lambda batch: _measurement("ok"))
    assert everything.largest_fitting == 64 and everything.smallest_failing is None


def test_bisection_stops_on_an_error_that_is_not_memory() -> None:
    result = find_max_batch("w", start=8, probe=lambda batch: _measurement("ok" if batch < 16 else "error"))
    assert result.largest_fitting is None
    assert "other than memory" in result.message


def test_measurement_json_round_trip_keeps_everything() -> None:
    measurement = dataclasses.replace(
        _measurement("ok"),
        samples_per_second=_rate(123.4),
        cv=0.02,
        step_time_ms={"p50": 8.1},
        utilization={"cpu_percent": 97.0},
        warnings=("spread",),
        extra={"blocks": 9, "nan": float("nan")},
    )
    data = measurement_to_dict(measurement)
    assert data["extra"]["nan"] is None  # JSON has no NaN
    back = measurement_from_dict(data)
    assert back.samples_per_second == measurement.samples_per_second
    assert back.warnings == ("spread",)
    assert back.host == HOST
    assert data["workload"] == {"name": "w", "fingerprint": "f" * 16}
