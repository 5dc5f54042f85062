"""Queueing and batching algebra on hand-computed cases, and the closed form against simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perdollar.predict.network_serving.queueing import (
    batching_latency,
    effective_batch,
    erlang_quantile,
    md1_decay_exponent,
    md1_mean_wait,
    md1_wait_quantile,
    plan_replicas,
    simulate_dynamic_batching,
)


def test_decay_exponent_solves_its_equation() -> None:
    rho = np.array([0.1, 0.5, 0.9, 0.99])
    x = md1_decay_exponent(rho)
    assert np.allclose(rho * (np.exp(x) - 1.0), x, rtol=1e-9)
    assert x[1] == pytest.approx(1.2564312, abs=1e-6)  # hand-solved: 0.5 (e^x − 1) = x
    assert np.isnan(md1_decay_exponent([1.0, 1.5, 0.0])).all()


def test_mean_wait_is_pollaczek_khinchine() -> None:
    # ρ = 0.5, s = 10 ms: ρ s / (2 (1 − ρ)) = 5 ms.
    assert md1_mean_wait(0.5, 0.01) == pytest.approx(0.005)
    assert md1_mean_wait(0.8, 0.01) == pytest.approx(0.02)
    assert math.isinf(md1_mean_wait(1.0, 0.01))


def test_single_request_batches_are_md1_by_hand() -> None:
    # λ = 50/s, s = 10 ms, batch 1: ρ = 0.5, x = 1.25643, C = 0.5 / (0.5 e^x − 1) = 0.66100,
    # P99 wait = ln(C / 0.01) · s / x = 33.36 ms, P99 latency = 43.36 ms; mean = 5 + 10 = 15 ms.
    result = batching_latency(50.0, 1.0, 0.01, 0.99)
    assert float(result.utilisation) == pytest.approx(0.5)
    assert float(result.fill_s) == 0.0
    assert float(result.wait_quantile_s) == pytest.approx(0.03336, abs=2e-5)
    assert float(result.latency_quantile_s) == pytest.approx(0.04336, abs=2e-5)
    assert float(result.latency_mean_s) == pytest.approx(0.015)


def test_wait_quantile_is_zero_when_most_requests_never_wait() -> None:
    # ρ = 0.005: the asymptotic tail constant is below 1 − q, so the P95 request does not wait.
    assert float(md1_wait_quantile(0.005, 0.01, 0.95)) == 0.0
    assert math.isinf(float(md1_wait_quantile(1.2, 0.01, 0.99)))


def test_effective_batch_is_capped_by_the_wait() -> None:
    assert float(effective_batch(400.0, 8, 0.01)) == pytest.approx(5.0)  # 1 + 400 × 0.01
    assert float(effective_batch(400.0, 8, np.inf)) == 8.0
    assert float(effective_batch(400.0, 8, 0.0)) == 1.0


def test_erlang_quantile_of_one_arrival_is_exponential() -> None:
    assert float(erlang_quantile(1, 1.0, 0.99)) == pytest.approx(-math.log(0.01), rel=0.01)
    assert float(erlang_quantile(0, 1.0, 0.99)) == 0.0
    # Median of 10 arrivals at rate 1 is close to 9.67.
    assert float(erlang_quantile(10, 1.0, 0.5)) == pytest.approx(9.669, rel=0.01)


def test_fill_time_counts_in_latency() -> None:
    # λ = 100/s, batch 4, unbounded wait, s(4) = 2 ms: mean fill 30 ms, half of it on average.
    result = batching_latency(100.0, 4.0, 0.002, 0.99)
    assert float(result.utilisation) == pytest.approx(100 * 0.002 / 4)
    assert float(result.latency_mean_s) > 0.015
    capped = batching_latency(100.0, 4.0, 0.002, 0.99, max_wait_s=0.01)
    assert float(capped.fill_s) == pytest.approx(0.01)


@pytest.mark.parametrize(
    ("rate", "batch", "wait", "base", "per_item"),
    [
        (50, 1, 0.0, 0.01, 0.0),
        (80, 1, 0.0, 0.01, 0.0),
        (400, 8, 1.0, 0.004, 0.001),
        (400, 8, 0.01, 0.004, 0.001),
        (200, 4, 1.0, 0.002, 0.0005),
        (100, 2, 1.0, 0.01, 0.003),
    ],
)
def test_closed_form_is_safe_and_close_against_simulation(
    rate: float, batch: int, wait: float, base: float, per_item: float
) -> None:
    def service(k: float) -> float:
        return base + per_item * k

    formed = effective_batch(rate, batch, wait)
    closed = batching_latency(rate, formed, service(float(formed)), 0.99, wait)
    simulated = simulate_dynamic_batching(rate, batch, wait, service, requests=40_000, seed=3)
    ratio = float(closed.latency_quantile_s) / float(np.quantile(simulated, 0.99))
    assert 0.95 <= ratio <= 1.6
    assert float(closed.latency_mean_s) == pytest.approx(simulated.mean(), rel=0.15)


def test_simulation_is_seeded() -> None:
    first = simulate_dynamic_batching(100, 4, 0.01, lambda k: 0.001 * k, requests=500, seed=7)
    again = simulate_dynamic_batching(100, 4, 0.01, lambda k: 0.001 * k, requests=500, seed=7)
    assert np.array_equal(first, again)


def test_plan_uses_one_replica_when_it_meets_the_slo() -> None:
    # 40 req/s × 1.25 headroom = 50/s on one replica: P99 43.4 ms ≤ 50 ms (hand case above).
    outcome = plan_replicas([1], [0.01], qps=40, slo_s={0.99: 0.050}, headroom=1.25)
    assert outcome.plan is not None
    assert outcome.plan.replicas == 1
    assert outcome.plan.latency_s[0.99] == pytest.approx(0.04336, abs=2e-5)


def test_plan_adds_a_replica_when_queueing_breaks_the_slo() -> None:
    # One replica gives P99 43.4 ms > 40 ms; two at 25/s each (ρ = 0.25) are well inside.
    outcome = plan_replicas([1], [0.01], qps=40, slo_s={0.99: 0.040}, headroom=1.25)
    assert outcome.plan is not None
    assert outcome.plan.replicas == 2
    assert outcome.plan.rate_per_replica == pytest.approx(25.0)
    assert outcome.plan.latency_s[0.99] <= 0.040


def test_batching_cuts_replicas_for_a_high_rate() -> None:
    sizes = [1, 2, 4, 8, 16, 32]
    service = [0.004 + 0.001 * b for b in sizes]  # 5 ms at batch 1: 200/s unbatched
    unbatched = plan_replicas([1], [0.005], qps=2000, slo_s={0.99: 0.05})
    batched = plan_replicas(
        sizes, service, qps=2000, slo_s={0.99: 0.05}, max_wait_options_s=(0.0, 0.005, 0.01, 0.02)
    )
    assert unbatched.plan is not None and batched.plan is not None
    assert batched.plan.replicas < unbatched.plan.replicas
    assert batched.plan.batch > 1
    assert batched.plan.latency_s[0.99] <= 0.05


def test_plan_excluded_when_one_request_alone_is_too_slow() -> None:
    outcome = plan_replicas([1, 2, 4], [0.06, 0.07, 0.09], qps=10, slo_s={0.99: 0.05})
    assert outcome.plan is None
    assert "over the 50 ms SLO at every batch size" in outcome.reason


def test_plan_meets_every_quantile_given() -> None:
    outcome = plan_replicas([1], [0.01], qps=40, slo_s={0.99: 0.050, 0.95: 0.020})
    assert outcome.plan is not None
    assert outcome.plan.latency_s[0.95] <= 0.020
    assert outcome.plan.replicas >= 2
