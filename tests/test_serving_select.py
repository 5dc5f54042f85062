"""SLO logic: plans per accelerator, exclusions with reasons, packing, spot spares, the mode hint."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from perdollar.catalog.filters import allowed_offers
from perdollar.predict.network_serving import ServiceCurve, ServingTarget, plan_accelerator
from perdollar.price.network_serving import price_deployments
from perdollar.select.network_serving import deployment_estimates, explain_serving, serving_mode_hint

SIZES = (1, 2, 4, 8, 16)


def _curve(key: str, base_s: float, per_item_s: float) -> ServiceCurve:
    seconds = tuple(base_s + per_item_s * b for b in SIZES)
    return ServiceCurve(key, SIZES, seconds, seconds, tuple(s * 1.2 for s in seconds), "spec", "compute")


def _offer(
    cloud: str,
    name: str,
    key: str | None,
    count: float,
    price: float,
    market: str = "on-demand",
    region: str = "us-east-1",
    bucket: str | None = None,
) -> dict[str, object]:
    return {
        "cloud": cloud,
        "instance_type": name,
        "region": region,
        "market": market,
        "price_per_hour": price,
        "accelerator_key": key,
        "accelerator_count": count,
        "interruption_bucket": bucket,
        "captured_at": "2026-05-20",
        "vcpus": 8.0,
        "network_gbps": 10.0,
    }


TARGET = ServingTarget(qps=400, slo_ms={0.99: 50.0}, headroom=1.25)
CURVES = {"FAST": _curve("FAST", 0.004, 0.001), "SLOW": _curve("SLOW", 0.060, 0.010)}


def test_accelerator_that_misses_the_slo_at_every_batch_is_excluded_with_the_reason() -> None:
    plan = plan_accelerator(CURVES["SLOW"], TARGET)
    assert plan.replicas == 0
    assert "SLO at every batch size" in plan.excluded_reason
    assert "P99 ≤ 50 ms" in plan.excluded_reason


def test_feasible_plan_meets_the_slo_even_on_the_slow_edge() -> None:
    plan = plan_accelerator(CURVES["FAST"], TARGET)
    assert not plan.excluded_reason
    assert plan.replicas >= 1
    assert plan.latency_ms[0.99] <= 50.0
    assert plan.replicas_if_slow >= plan.replicas
    # On the slow edge of the prediction the same plan is slower (or overloaded).
    assert plan.latency_high_ms[0.99] > plan.latency_ms[0.99]


def test_partial_device_runs_slower_and_needs_more_replicas() -> None:
    whole = plan_accelerator(CURVES["FAST"], TARGET)
    sixth = plan_accelerator(CURVES["FAST"], TARGET, device_fraction=1 / 6)
    assert sixth.replicas > whole.replicas


def _frame(offers: list[dict[str, object]], target: ServingTarget = TARGET) -> pd.DataFrame:
    from perdollar.predict.network_serving import plan_all

    table = pd.DataFrame(offers)
    return price_deployments(plan_all(CURVES, table, target), table, target)


def test_deployments_are_packed_priced_and_ranked() -> None:
    plan = plan_accelerator(CURVES["FAST"], TARGET)
    frame = _frame(
        [
            _offer("aws", "one-gpu", "FAST", 1, 1.0),
            _offer("gcp", "four-gpu", "FAST", 4, 3.0),
            _offer("azure", "slow-gpu", "SLOW", 1, 0.1),
            _offer("aws", "cpu-box", None, 0, 0.05),
        ]
    )
    feasible = frame[frame["feasible"]]
    assert set(feasible["instance_type"]) == {"one-gpu", "four-gpu"}
    one = feasible.set_index("instance_type").loc["one-gpu"]
    four = feasible.set_index("instance_type").loc["four-gpu"]
    assert one["instances"] == plan.replicas
    assert four["instances"] == math.ceil(plan.replicas / 4)
    # $ per million requests = instances × $/h / (qps × 3600) × 1e6, by hand.
    assert one["usd_per_million_requests"] == pytest.approx(plan.replicas * 1.0 / (400 * 3600) * 1e6)
    assert list(frame["feasible"])[:2] == [True, True]
    costs = list(feasible["usd_per_million_requests"])
    assert costs == sorted(costs)
    reasons = frame[~frame["feasible"]].set_index("instance_type")["excluded_reason"]
    assert "SLO at every batch size" in reasons["slow-gpu"]
    assert "CPU-only" in reasons["cpu-box"]


def test_spot_adds_spare_instances_by_interruption_bucket() -> None:
    frame = _frame(
        [
            _offer("aws", "g", "FAST", 1, 1.0, market="on-demand"),
            _offer("aws", "g", "FAST", 1, 0.4, market="spot", bucket="<5%"),
            _offer("gcp", "h", "FAST", 1, 0.4, market="spot", bucket=None),
        ]
    )
    rows = frame.set_index(["cloud", "market"])
    on_demand = rows.loc[("aws", "on-demand")]
    assert on_demand["spot_extra_instances"] == 0
    assert rows.loc[("aws", "spot")]["spot_extra_instances"] >= 1
    # Unpublished interruption rates get the wider default share: at least as many spares.
    assert (
        rows.loc[("gcp", "spot")]["spot_extra_instances"] >= rows.loc[("aws", "spot")]["spot_extra_instances"]
    )
    assert (
        rows.loc[("aws", "spot")]["instances"]
        == on_demand["instances"] + rows.loc[("aws", "spot")]["spot_extra_instances"]
    )


def test_user_overprovision_share_replaces_the_bucket() -> None:
    target = ServingTarget(qps=400, slo_ms={0.99: 50.0}, spot_overprovision=1.0)
    frame = _frame([_offer("aws", "g", "FAST", 1, 0.4, market="spot", bucket="<5%")], target)
    row = frame.iloc[0]
    assert row["spot_extra_instances"] == row["instances"] - row["spot_extra_instances"]  # doubled


def test_estimates_and_explanation_carry_the_serving_facts() -> None:
    frame = _frame([_offer("aws", "one-gpu", "FAST", 1, 1.0), _offer("azure", "slow-gpu", "SLOW", 1, 0.1)])
    estimates = deployment_estimates(frame, TARGET)
    assert [e.feasible for e in estimates] == [True, False]
    top = estimates[0]
    assert top.serving is not None
    assert top.serving is not None and top.serving.replicas >= 1
    assert top.serving.latency_quantile == 0.99 and top.serving.latency_ms <= 50.0
    assert top.samples_per_dollar == pytest.approx(400 * 3600 / top.price_per_hour)
    text = explain_serving(frame, TARGET, serving_mode_hint(400, 50, 1e3))
    assert "one-gpu" in text and "SLOW" in text and "real-time" in text


def test_serving_offers_are_filtered_by_market_cloud_and_region_pattern() -> None:
    table = pd.DataFrame(
        [
            _offer("aws", "a", "FAST", 1, 1.0, region="us-east-1"),
            _offer("aws", "b", "FAST", 1, 1.0, region="eu-west-1"),
            _offer("gcp", "c", "FAST", 1, 1.0, region="us-central1", market="spot"),
            _offer("aws", "free", "FAST", 1, 0.0),
        ]
    )
    allowed = allowed_offers(table, clouds=("aws",), regions=("us-*",), market="on-demand", priced_only=True)
    assert list(allowed["instance_type"]) == ["a"]


@pytest.mark.parametrize(
    ("qps", "slo_ms", "payload", "mode"),
    [
        (400, 50, 1e3, "real-time"),
        (0.05, 30_000, 1e3, "serverless"),
        (0.05, 100, 1e3, "real-time (small)"),
        (5, 10_000, 50e6, "asynchronous"),
        (100, None, 1e3, "batch"),
    ],
)
def test_serving_mode_hint(qps: float, slo_ms: float | None, payload: float, mode: str) -> None:
    assert serving_mode_hint(qps, slo_ms, payload)[0] == mode


def test_cpu_instances_are_served_from_a_measured_cpu_curve() -> None:
    from perdollar.predict.network_serving import CPU_KEY, cpu_curve, plan_all

    measured = {1: (0.002, 0.0018, 0.0025), 4: (0.005, 0.0045, 0.006)}
    curves = {**CURVES, CPU_KEY: cpu_curve(measured)}
    assert curves[CPU_KEY].basis == "calibrated"
    offers = pd.DataFrame([_offer("aws", "c-8", None, 0, 0.3), _offer("aws", "c-1", None, 0, 0.05)])
    offers.loc[0, "vcpus"], offers.loc[1, "vcpus"] = 8.0, 1.0
    frame = price_deployments(plan_all(curves, offers, TARGET), offers, TARGET, cpu_cores_per_replica=2)
    rows = frame.set_index("instance_type")
    assert rows.loc["c-8", "feasible"]
    assert rows.loc["c-8", "replicas_per_instance"] == 4
    assert rows.loc["c-8", "instances"] == math.ceil(rows.loc["c-8", "replicas"] / 4)
    assert "fewer vCPUs than the 2-core host" in rows.loc["c-1", "excluded_reason"]


def test_local_measurements_replace_and_rescale_the_prediction() -> None:
    from perdollar.predict.network_serving.curves import _with_measurements

    predicted = ServiceCurve("A10G", (1, 2, 4, 8), (1.0, 2.0, 4.0, 8.0), (0.5,) * 4, (2.0,) * 4, "spec")
    measured = _with_measurements(predicted, {1: (2.0, 1.9, 2.2), 2: (4.0, 3.8, 4.4)})
    assert measured.basis == "measured"
    assert measured.batch_sizes == (1, 2, 4, 8)
    assert measured.seconds == (2.0, 4.0, 8.0, 16.0)  # unmeasured sizes scaled by the ratio 2
    assert measured.high[:2] == (2.2, 4.4)
