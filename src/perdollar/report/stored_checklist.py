"""The checklist for a stored recommendation: its workload's stored measurements, judged
against the recommended instance."""

from __future__ import annotations

from dataclasses import replace

from perdollar.measure.result import Measurement
from perdollar.report.checklist import CheckedMachine, CheckItem, evaluate
from perdollar.report.checklist_inputs import evidence_from_measurements
from perdollar.select.model import Recommendation


def _target(recommendation: Recommendation, measurements: list[Measurement]) -> CheckedMachine:
    top = next((e for e in recommendation.estimates if e.feasible), None)
    if top is not None:
        try:
            from perdollar.catalog import load
            from perdollar.report.checklist_inputs import target_for_instance

            catalog = load()
            target = target_for_instance(catalog.instance(top.instance_type, cloud=top.cloud), catalog)
            # Judged at the rate the recommendation predicted for it, not at the rate measured here.
            devices = top.nodes * max(top.accelerators_per_node, 1.0)
            per_device = top.samples_per_second / devices if top.samples_per_second > 0 else None
            return replace(target, predicted_samples_per_second=per_device)
        except Exception:
            pass
    from perdollar.report.checklist_inputs import target_for_host

    return target_for_host(measurements[-1].host, None)


def checklist_for(
    recommendation: Recommendation, measurements: list[Measurement]
) -> tuple[CheckItem, ...] | None:
    """None when nothing was measured for this workload (the report then says how to get it)."""
    if not measurements:
        return None
    evidence = evidence_from_measurements(
        measurements, precision=recommendation.question.precision, input_bytes_per_sample=None
    )
    return evaluate(evidence, _target(recommendation, measurements))
