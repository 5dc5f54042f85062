"""The sweep loop's choices: what VOI measures, when it stops, and budgets.

The executor here replays known throughputs (as the strategy simulation does with published
figures); re-ranking marks measured candidates ``measured``, as the recommendation does.
"""

from __future__ import annotations

import dataclasses

from perdollar.launch.jobs import JobOptions, job_for_estimate
from perdollar.launch.outcome import JobOutcome
from perdollar.launch.sweep import SweepSettings, hardware_key, run_sweep
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from test_launch_jobs import make_estimate

HOST = HostFingerprint("cpu", 8, 32.0, "A10G", "A10G", 1, None, "g5.xlarge", "aws")


class ReplayExecutor:
    """Returns each candidate's true throughput; candidates in ``unavailable`` fail to provision."""

    name = "replay"

    def __init__(self, truth: dict[str, float], unavailable: frozenset[str] = frozenset()) -> None:
        self.truth = truth
        self.unavailable = unavailable
        self.launched: list[str] = []

    def run(self, job, on_line=None) -> JobOutcome:
        instance = job.resources.instance_type
        self.launched.append(instance)
        if instance in self.unavailable:
            return JobOutcome(
                job, self.name, "failed-to-provision", "ResourcesUnavailableError: no capacity", None, 1
            )
        rate = self.truth[instance]
        measurement = Measurement(
            "ok",
            "cached-input",
            "mlp",
            "f",
            64,
            "fp32",
            dataclasses.replace(HOST, instance_type=instance),
            "2026-01-01T00:00:00+00:00",
            samples_per_second=Rate(rate, rate * 0.99, rate * 1.01),
        )
        return JobOutcome(job, self.name, "ok", "", measurement, 1)


def _rerank(ranked):
    def rerank(measurements):
        measured = {m.host.instance_type: m.samples_per_second.median for m in measurements}
        updated = []
        for estimate in ranked:
            if estimate.instance_type in measured:
                rate = measured[estimate.instance_type]
                estimate = dataclasses.replace(
                    estimate,
                    samples_per_second=rate,
                    samples_per_second_low=rate * 0.99,
                    samples_per_second_high=rate * 1.01,
                    basis="measured",
                    samples_per_dollar=rate * 3600 / estimate.price_per_hour,
                )
            updated.append(estimate)
        return sorted(updated, key=lambda e: -e.samples_per_dollar)

    return rerank


def _make_job(estimate, index):
    return job_for_estimate(estimate, index, JobOptions(workload="mlp", duration_s=30))


def test_voi_stops_once_the_leader_is_measured_clear_of_the_rest() -> None:
    ranked = [
        make_estimate("g6.xlarge", 1000, 0.805, band=0.3),  # the leader, uncertain
        make_estimate("g5.xlarge", 900, 1.006, band=0.05),  # 30% behind, well known
        make_estimate("p3.2xlarge", 600, 3.06, band=0.05),  # far behind and dear
    ]
    executor = ReplayExecutor({"g6.xlarge": 1100, "g5.xlarge": 900, "p3.2xlarge": 600})
    result = run_sweep(
        ranked,
        _make_job,
        executor,
        SweepSettings(strategy="voi", max_runs=3, parallel=1),
        rerank=_rerank(ranked),
    )
    assert executor.launched == ["g6.xlarge"]
    assert "stable" in result.stopped_because and result.p_top_is_best >= 0.9
    assert result.after[0].basis == "measured"
    assert result.choices[0].value_of_information > 0


def test_voi_measures_a_close_cheap_challenger_and_flips_the_choice() -> None:
    ranked = [
        make_estimate("g5.xlarge", 1000, 1.0, band=0.05),  # leader, well known
        make_estimate("g4dn.xlarge", 480, 0.5, band=0.4),  # just behind, very uncertain, half the price
        make_estimate("p3.2xlarge", 300, 3.06, band=0.05),
    ]
    executor = ReplayExecutor({"g5.xlarge": 1000, "g4dn.xlarge": 700, "p3.2xlarge": 300})
    result = run_sweep(
        ranked,
        _make_job,
        executor,
        SweepSettings(strategy="voi", max_runs=3, parallel=1),
        rerank=_rerank(ranked),
    )
    assert executor.launched[0] == "g4dn.xlarge"
    assert hardware_key(result.after[0]) == "aws:g4dn.xlarge:1"
    assert any(line.startswith("top choice changed") for line in result.changes)


def test_budget_and_failed_provisioning() -> None:
    ranked = [
        make_estimate(name, 1000 - 10 * i, 1.0 + i / 10)
        for i, name in enumerate(["g5.xlarge", "g6.xlarge", "g4dn.xlarge", "g5.2xlarge"])
    ]
    executor = ReplayExecutor(
        {e.instance_type: e.samples_per_second for e in ranked}, unavailable=frozenset({"g5.xlarge"})
    )
    cost = _make_job(ranked[0], 0).caps.max_dollars
    result = run_sweep(
        ranked,
        _make_job,
        executor,
        SweepSettings(strategy="top-k", max_runs=None, budget_usd=cost * 2.5, parallel=2),
        rerank=_rerank(ranked),
    )
    statuses = {o.job.resources.instance_type: o.status for o in result.outcomes}
    assert statuses["g5.xlarge"] == "failed-to-provision"
    assert "ok" in statuses.values()  # the sweep went on after the failure
    assert result.spent_cap_usd <= cost * 2.5
    assert "budget" in result.stopped_because
