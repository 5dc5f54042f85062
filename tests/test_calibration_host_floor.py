"""A measured host dispatch time is a floor under every calibrated step time."""

from __future__ import annotations

import dataclasses

import pytest

from perdollar import catalog as catalog_mod
from perdollar.measure.result import HostFingerprint, Measurement, Rate
from perdollar.predict import Calibration, predict, predict_step_time
from perdollar.predict.calibration import device_share_of_step, with_host_floor
from perdollar.profile.model import MemoryBreakdown, OperatorRecord, Profile


@pytest.fixture(scope="module")
def cat():
    return catalog_mod.load()


def gemm_profile(edge: int, count: int, *, batch: int) -> Profile:
    flops = 2.0 * edge**3
    operator = OperatorRecord(
        "aten.mm", "matmul", "forward", flops, 4.0 * edge * edge, 2.0 * edge * edge, "fp16",
        count=count, gemm_mnk=(edge, edge, edge),
    )  # fmt: skip
    return Profile(
        workload_name="hand-built",
        workload_fingerprint=f"gemm-{edge}-{count}-{batch}",
        kind="inference",
        batch_size=batch,
        precision="amp-fp16",
        sample_unit="samples",
        params=10_000_000,
        trainable_params=0,
        operators=(dataclasses.replace(operator, flops=flops * count),),
        memory=MemoryBreakdown(weights=4e7, gradients=0, optimizer_state=0, activations=1e8, workspace=1e7),
        gradient_bytes=0.0,
        input_bytes_per_sample=1000.0,
    )


def measured(profile: Profile, key: str, step_seconds: float, host_ms: float | None) -> Measurement:
    rate = profile.batch_size / step_seconds
    host = HostFingerprint("cpu", 8, 32.0, key, key, 1, None, "g5.2xlarge", "aws")
    return Measurement(
        status="ok",
        mode="inference",
        workload_name=profile.workload_name,
        workload_fingerprint=profile.workload_fingerprint,
        batch_size=profile.batch_size,
        precision=profile.precision,
        host=host,
        started_at="2026-01-01T00:00:00Z",
        samples_per_second=Rate(rate, rate * 0.99, rate * 1.01),
        extra={} if host_ms is None else {"host_dispatch_ms": host_ms},
    )


def test_taking_the_host_out_of_a_step_and_putting_it_back_gives_the_step():
    for step, host in ((0.030, 0.010), (0.012, 0.010), (0.5, 0.001)):
        device = device_share_of_step(step, host)
        assert device is not None and device < step
        assert float(with_host_floor(device, host)) == pytest.approx(step)
    assert device_share_of_step(0.0105, 0.010) is None  # within 10% of the host: host-bound
    assert device_share_of_step(0.02, None) == 0.02


def test_a_host_bound_anchor_holds_a_faster_gpu_at_the_hosts_rate(cat):
    """Measured at 18 ms a step on an A10G whose host takes 17.5 ms to enqueue it, a small step
    runs no faster on an H100: the host sets the rate. Without the host's time the ratio of the
    two GPUs' models would have been carried across instead."""
    profile = gemm_profile(1024, 200, batch=1)
    anchor = [measured(profile, "A10G", 0.018, 17.5)]
    with_host = Calibration.from_measurements(profile, anchor, cat)
    assert with_host.host_seconds == pytest.approx(0.0175)
    assert with_host.scale == 1.0  # the anchor says nothing of its device: specs stand
    h100 = cat.accelerators["H100-SXM5-80GB"]
    estimate = predict_step_time(profile, h100, with_host)
    assert estimate.basis == "calibrated" and estimate.bottleneck == "overhead"
    assert 0.0175 <= estimate.seconds < 0.0175 * 1.02
    assert estimate.breakdown["host dispatch"] > 0
    assert sum(estimate.breakdown.values()) == pytest.approx(estimate.seconds)

    on_anchor = predict_step_time(profile, cat.accelerators["A10G"], with_host)
    assert on_anchor.basis == "measured" and on_anchor.bottleneck == "overhead"
    assert on_anchor.seconds == pytest.approx(0.018)

    without = Calibration.from_measurements(profile, [measured(profile, "A10G", 0.018, None)], cat)
    assert predict_step_time(profile, cat.accelerators["A10G"], without).bottleneck != "overhead"
    assert predict_step_time(profile, h100, without).seconds < 0.5 * estimate.seconds

    instance = predict(profile, cat.instance("p5.48xlarge"), cat, calibration=with_host)
    assert instance.bottleneck == "overhead"
    assert instance.compute_time_s == pytest.approx(estimate.seconds, rel=1e-6)
    assert sum(instance.breakdown_s.values()) == pytest.approx(estimate.seconds)


def test_a_device_bound_anchor_keeps_its_ratio_once_the_host_is_taken_out(cat):
    profile = gemm_profile(8192, 40, batch=64)
    t4 = cat.accelerators["T4"]
    free = Calibration.from_measurements(profile, [measured(profile, "A10G", 0.5, None)], cat)
    floored = Calibration.from_measurements(profile, [measured(profile, "A10G", 0.5, 1.0)], cat)
    assert floored.scale == pytest.approx(free.scale, rel=1e-3)
    with_floor = predict_step_time(profile, t4, floored)
    assert with_floor.seconds == pytest.approx(predict_step_time(profile, t4, free).seconds, rel=1e-3)
    assert with_floor.bottleneck != "overhead"
