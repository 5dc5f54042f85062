"""The ranked deployments of a served network, as ``recommend --inference`` prints them."""

from __future__ import annotations

from rich.console import Console

from perdollar.cli.serving_render import deployment_rows, deployment_table
from perdollar.price.model import Estimate, ServingFigures


def _estimate(serving: ServingFigures | None) -> Estimate:
    return Estimate(
        cloud="aws", instance_type="g5.xlarge", region="us-east-1", market="on-demand", nodes=1,
        accelerator="A10G", accelerators_per_node=1.0, samples_per_second=40.0, samples_per_second_low=30.0,
        samples_per_second_high=50.0, basis="spec", bottleneck="compute", price_per_hour=1.006,
        samples_per_dollar=143_000.0, time_to_target_hours=None, cost_to_target_usd=None,
        expected_time_hours=None, expected_cost_usd=None, p_meet_deadline=None, fits=True,
        excluded_reason="", captured_at="2026-05-20", serving=serving,
    )  # fmt: skip


def _shown(*estimates: Estimate) -> str:
    console = Console(width=250, record=True, file=None)
    console.print(deployment_table(deployment_rows(estimates, top=5), "P99 ≤ 50 ms", 10.0))
    return console.export_text()


def _figures(latency_ms: float | None, latency_high_ms: float | None) -> ServingFigures:
    return ServingFigures(
        replicas=1, batch=4, max_wait_ms=2.0, latency_ms=latency_ms, latency_high_ms=latency_high_ms,
        capacity_per_replica_rps=300.0, usd_per_million_requests=0.93, usd_per_million_requests_high=1.2,
    )  # fmt: skip


def test_a_deployment_whose_latency_was_not_predicted_shows_a_dash_beside_one_predicted() -> None:
    shown = _shown(_estimate(_figures(12.5, 19.0)), _estimate(_figures(None, None)))
    predicted, unpredicted = [line for line in shown.splitlines() if "g5.xlarge" in line]
    assert "12.5 (19)" in predicted and "– (–)" in unpredicted
