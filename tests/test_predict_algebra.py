"""The roofline's algebra on hand-built profiles, and the communication model in closed form."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from perdollar import catalog as catalog_mod
from perdollar.predict import Calibration, predict, predict_frame, predict_step_time
from perdollar.predict.communication import (
    INTRA_HOST_LATENCY_S,
    LINK_EFFICIENCY,
    exposed_seconds,
    link_for,
    ring_allreduce_seconds,
)
from perdollar.predict.step import device_steps
from perdollar.profile.model import MemoryBreakdown, OperatorRecord, Profile

GPU_KEYS = ("T4", "V100-SXM2-16GB", "A10G", "L4", "A100-SXM4-80GB", "H100-SXM5-80GB", "RTX-3090")


def make_profile(
    operators, *, batch=64, gradient_bytes=4e8, kind="train", precision="amp-fp16", activations=2e9
) -> Profile:
    return Profile(
        workload_name="hand-built",
        workload_fingerprint=f"hand-{len(operators)}-{batch}-{kind}",
        kind=kind,
        batch_size=batch,
        precision=precision,
        sample_unit="samples",
        params=100_000_000,
        trainable_params=100_000_000,
        operators=tuple(operators),
        memory=MemoryBreakdown(
            weights=4e8, gradients=4e8, optimizer_state=8e8, activations=activations, workspace=1e8
        ),
        gradient_bytes=gradient_bytes,
        input_bytes_per_sample=150_528.0,
    )


def big_matmul(dtype="fp16") -> OperatorRecord:
    m = n = k = 8192
    return OperatorRecord(
        "aten.mm",
        "matmul",
        "forward",
        2.0 * m * n * k,
        2.0 * (m * k + k * n),
        2.0 * m * n,
        dtype,
        count=1,
        gemm_mnk=(m, n, k),
    )


def big_copy(nbytes=4e9) -> OperatorRecord:
    return OperatorRecord("aten.copy_", "copy", "forward", 0.0, nbytes / 2, nbytes / 2, "fp16")


@pytest.fixture(scope="module")
def cat():
    return catalog_mod.load()


def test_pure_matmul_is_compute_bound_on_every_gpu(cat):
    one = big_matmul()
    # sixteen 8192³ GEMMs: long enough on an H100 that the fixed per-step time does not dominate
    many = dataclasses.replace(
        one,
        flops=16 * one.flops,
        bytes_read=16 * one.bytes_read,
        bytes_written=16 * one.bytes_written,
        count=16,
    )
    steps = device_steps(make_profile([many]), [cat.accelerators[k] for k in GPU_KEYS])
    for i, key in enumerate(GPU_KEYS):
        assert steps.bottleneck(i) == "compute", key
        assert steps.compute_bound[i] > 10 * steps.memory_bound[i]


def test_pure_copy_is_memory_bound_on_every_gpu(cat):
    steps = device_steps(make_profile([big_copy()]), [cat.accelerators[k] for k in GPU_KEYS])
    for i, key in enumerate(GPU_KEYS):
        assert steps.bottleneck(i) == "memory-bandwidth", key
        assert steps.memory_bound[i] > 0 and steps.compute_bound[i] == 0


def test_doubling_bandwidth_halves_a_memory_bound_time(cat):
    base = cat.accelerators["A10G"]  # below the bandwidth where the high-bandwidth penalty starts
    doubled = dataclasses.replace(base, key="A10G-2x", memory_bandwidth_gbps=base.memory_bandwidth_gbps * 1.4)
    profile = make_profile([big_copy(8e9)])
    t1, t2 = device_steps(profile, [base, doubled]).seconds
    overhead = device_steps(profile, [base]).overhead[0]
    ratio = (t1 - overhead) / (t2 - overhead)
    # 1.4× keeps both under 900 GB/s, where memory time is exactly bytes / (bandwidth × efficiency)
    assert ratio == pytest.approx(1.4, rel=1e-9)


def test_doubling_bandwidth_on_any_chip_at_least_speeds_up_copy(cat):
    base = cat.accelerators["T4"]
    doubled = dataclasses.replace(base, memory_bandwidth_gbps=base.memory_bandwidth_gbps * 2)
    profile = make_profile([big_copy(8e9)])
    t1, t2 = device_steps(profile, [base, doubled]).seconds
    overhead = device_steps(profile, [base]).overhead[0]
    assert (t1 - overhead) / (t2 - overhead) == pytest.approx(2.0, rel=1e-9)


def test_fp32_matmul_slower_than_fp16_on_tensor_core_gpus(cat):
    accs = [cat.accelerators[k] for k in ("V100-SXM2-16GB", "A100-SXM4-80GB", "T4")]
    t16 = device_steps(make_profile([big_matmul("fp16")]), accs).seconds
    t32 = device_steps(make_profile([big_matmul("fp32")]), accs).seconds
    assert np.all(t32 > 2 * t16)


def test_small_gemm_runs_far_below_peak(cat):
    small = OperatorRecord(
        "aten.mm",
        "matmul",
        "forward",
        2.0 * 64**3,
        3 * 2 * 64 * 64,
        0.0,
        "fp16",
        count=1000,
        gemm_mnk=(64, 64, 64),
    )
    acc = cat.accelerators["A100-SXM4-80GB"]
    seconds = device_steps(make_profile([small]), [acc]).seconds[0]
    achieved = small.flops / seconds
    assert achieved < 0.05 * acc.peak_fp16_tflops * 1e12


def test_ring_allreduce_matches_closed_form():
    gradient = 1e9
    bw = 100e9
    for n in (2, 4, 8, 16):
        expected = 2 * (n - 1) / n * gradient / bw + 2 * (n - 1) * 1e-5
        assert float(ring_allreduce_seconds(gradient, n, bw, 1e-5)) == pytest.approx(expected)
    assert float(ring_allreduce_seconds(gradient, 1, bw, 1e-5)) == 0.0


def test_slowest_link_is_network_between_hosts_and_interconnect_inside():
    bw, lat = link_for([1, 2], [4, 4], [64.0, 64.0], [25.0, 25.0], [0, 0])
    assert bw[0] == pytest.approx(64 / 2 * 1e9 * LINK_EFFICIENCY)
    assert lat[0] == INTRA_HOST_LATENCY_S
    assert bw[1] < bw[0]  # 25 Gbps network is slower than PCIe
    assert float(exposed_seconds(1.0, 2.0, 0.8)) == 0.0
    assert float(exposed_seconds(1.0, 0.5, 0.8)) == pytest.approx(0.6)


def test_many_small_vs_one_big_shows_communication(cat):
    profile = make_profile([big_matmul(), big_copy()], gradient_bytes=4e8)
    one_big = predict(profile, cat.instance("g5.12xlarge"), cat)
    many_small = predict(profile, cat.instance("g5.2xlarge"), cat, nodes=4)
    assert one_big.accelerators_per_node == 4 and many_small.nodes == 4
    assert many_small.communication_time_s > one_big.communication_time_s
    assert many_small.samples_per_second < one_big.samples_per_second
    single = predict(profile, cat.instance("g5.2xlarge"), cat)
    assert single.communication_time_s == 0.0
    assert single.samples_per_second_low < single.samples_per_second < single.samples_per_second_high


def test_calibration_transfers_by_model_ratio(cat):
    profile = make_profile([big_matmul(), big_copy()])
    a10g, t4 = cat.accelerators["A10G"], cat.accelerators["T4"]
    spec_a10g = predict_step_time(profile, a10g)
    spec_t4 = predict_step_time(profile, t4)
    measurement = _measurement(profile, "A10G", rate=0.5 * profile.batch_size / spec_a10g.seconds)
    calibration = Calibration.from_measurements(profile, [measurement], cat)
    assert calibration.scale == pytest.approx(2.0)
    measured = predict_step_time(profile, a10g, calibration)
    assert measured.basis == "measured"
    assert measured.seconds == pytest.approx(2 * spec_a10g.seconds)
    transferred = predict_step_time(profile, t4, calibration)
    assert transferred.basis == "calibrated"
    assert transferred.seconds == pytest.approx(2 * spec_t4.seconds)
    assert transferred.low < transferred.seconds < transferred.high


def test_memory_fit_and_largest_batch(cat):
    profile = make_profile([big_matmul()], activations=40e9, batch=64)
    p = predict(profile, cat.instance("g5.2xlarge"), cat)  # A10G 24 GB
    assert not p.fits and "GiB" in p.fit_reason
    assert p.max_batch_that_fits is not None and 0 < p.max_batch_that_fits < 64
    roomy = predict(profile, cat.instance("p4de.24xlarge"), cat)
    assert roomy.fits


def test_no_largest_batch_from_a_peak_that_holds_no_activations(cat):
    """A small batch's traced peak can fall in the optimizer step, with activations freed: it
    says nothing of how memory grows with the batch (it once claimed 9.4 billion samples)."""
    peak_without = make_profile([big_matmul()], activations=8.0, batch=4)
    p = predict(peak_without, cat.instance("p5.48xlarge"), cat)
    assert p.fits and p.max_batch_that_fits is None
    peak_with = make_profile([big_matmul()], activations=2e9, batch=4)
    assert predict(peak_with, cat.instance("p5.48xlarge"), cat).max_batch_that_fits > 4


def test_frame_covers_the_catalog_with_node_counts(cat):
    profile = make_profile([big_matmul(), big_copy()])
    frame = predict_frame(profile, cat, [1, 2])
    assert len(frame) == 2 * len(cat.instance_types)
    gpu = frame[(frame.instance_type == "p4d.24xlarge") & (frame.nodes == 2)].iloc[0]
    assert gpu.samples_per_second > 0 and gpu.basis == "spec"
    cpu = frame[frame.accelerator_key.isna() & (frame.nodes == 1)]
    assert len(cpu) and (cpu.samples_per_second > 0).all()
    assert math.isfinite(float(frame.samples_per_second.max()))


def _measurement(profile: Profile, key: str, rate: float):
    from perdollar.measure.result import HostFingerprint, Measurement, Rate

    host = HostFingerprint(
        cpu_model="x",
        cpu_cores=8,
        memory_gib=32,
        accelerator=key,
        accelerator_key=key,
        accelerator_count=1,
        driver=None,
        instance_type="g5.2xlarge",
        cloud="aws",
    )
    return Measurement(
        status="ok",
        mode="cached-input",
        workload_name=profile.workload_name,
        workload_fingerprint=profile.workload_fingerprint,
        batch_size=profile.batch_size,
        precision=profile.precision,
        host=host,
        started_at="2026-01-01T00:00:00Z",
        samples_per_second=Rate(rate, rate * 0.99, rate * 1.01),
    )


def test_host_ceilings_name_their_bottleneck(cat):
    profile = make_profile([big_matmul(), big_copy()])
    free = predict(profile, cat.instance("g5.2xlarge"), cat)
    starved = predict(
        profile, cat.instance("g5.2xlarge"), cat, input_rate_per_core=0.01 * free.samples_per_second
    )
    assert starved.bottleneck == "input-pipeline"
    assert starved.samples_per_second == pytest.approx(0.01 * free.samples_per_second * 8)  # 8 vCPUs
    bigger_host = predict(
        profile, cat.instance("g5.4xlarge"), cat, input_rate_per_core=0.01 * free.samples_per_second
    )
    assert bigger_host.samples_per_second > starved.samples_per_second  # 16 vCPUs feed the same GPU faster
    streamed = predict(profile, cat.instance("g5.2xlarge"), cat, data_bytes_per_sample=1e9)
    assert streamed.bottleneck == "network-ingest"
    network_bytes = cat.instance("g5.2xlarge").network_gbps / 8 * 1e9
    assert streamed.samples_per_second == pytest.approx(network_bytes / 1e9)


def test_step_overhead_pulls_small_step_ratios_toward_one(cat):
    from perdollar.predict.params import ModelParams

    accs = [cat.accelerators[k] for k in ("T4", "H100-SXM5-80GB")]
    tiny = make_profile([big_matmul()], batch=1)
    without = device_steps(tiny, accs, ModelParams(step_overhead_s=1e-6)).seconds
    heavy = device_steps(tiny, accs, ModelParams(step_overhead_s=1.0)).seconds
    # the same fixed time on both GPUs: the slow/fast ratio shrinks toward 1 as it dominates
    assert without[0] / without[1] > 5
    assert 1.0 < heavy[0] / heavy[1] < 1.1
    assert heavy[0] - without[0] == pytest.approx(heavy[1] - without[1])


def test_power_capped_board_loses_simt_rate_by_its_own_exponent(cat):
    from perdollar.predict.params import ModelParams

    t4 = cat.accelerators["T4"]  # 70 W for 40 SMs at 1.59 GHz: below the reference power density
    strict = dataclasses.replace(big_matmul("fp32"), op_class="matmul")
    profile = make_profile([strict], precision="fp32")
    base = ModelParams(power_exponent=0.0, power_exponent_simt=0.0, step_overhead_s=1e-6)
    capped = dataclasses.replace(base, power_exponent_simt=1.0)
    t_free = device_steps(profile, [t4], base).seconds[0]
    t_capped = device_steps(profile, [t4], capped).seconds[0]
    density = t4.tdp_w / (t4.sm_count * t4.boost_clock_mhz / 1000)
    assert t_capped / t_free == pytest.approx(base.power_reference_w_per_sm_ghz / density, rel=0.01)
    tensor_only = dataclasses.replace(base, power_exponent=1.0)  # fp32 matmul never uses it on T4
    assert device_steps(profile, [t4], tensor_only).seconds[0] == pytest.approx(t_free)


def test_weight_gradient_with_a_tiny_output_splits_its_reduction_across_sms(cat):
    """A 256×256 output (4 tiles) reduced over K = 65,536 runs near the rate of a huge square
    GEMM per FLOP, not 1/27 of it (split-K), while a shallow K leaves the SMs idle."""
    from perdollar.predict.params import ModelParams

    def gemm(m, n, k):
        return OperatorRecord(
            "aten.mm", "matmul", "backward", 2.0 * m * n * k, 0.0, 0.0, "fp16", count=1, gemm_mnk=(m, n, k)
        )

    params = ModelParams(step_overhead_s=1e-9, kernel_overhead_s=2e-6)
    acc = [cat.accelerators["A100-SXM4-80GB"]]  # 108 SMs
    tall = device_steps(make_profile([gemm(256, 256, 65536)]), acc, params).compute_bound[0]
    huge = device_steps(make_profile([gemm(8192, 8192, 8192)]), acc, params).compute_bound[0]
    per_flop_tall = tall / (2.0 * 256 * 256 * 65536)
    assert per_flop_tall == pytest.approx(huge / (2.0 * 8192**3), rel=0.1)
    shallow = device_steps(make_profile([gemm(256, 256, 256)]), acc, params).compute_bound[0]
    assert shallow / (2.0 * 256**3) > 20 * per_flop_tall  # 4 tiles on 108 SMs, nothing to split


def test_power_law_carries_on_below_every_fitted_board(cat):
    """The 72 W L4 (~0.61 W per SM-GHz) lies below every board of the development set; its
    GEMMs still slow down by (density / reference) ** exponent, not at the lowest fitted density.
    Checked with the shipped fit's parameters, which once carried such a floor."""
    from perdollar.predict.params import shipped_model

    l4, t4 = cat.accelerators["L4"], cat.accelerators["T4"]
    profile = make_profile([big_matmul("fp16")])
    shipped = dataclasses.replace(shipped_model().params, step_overhead_s=1e-6)
    capped = dataclasses.replace(shipped, power_exponent=0.5, power_reference_w_per_sm_ghz=2.0)
    uncapped = dataclasses.replace(capped, power_exponent=0.0)

    def slowdown(chip):
        slow = device_steps(profile, [chip], capped).seconds[0]
        return slow / device_steps(profile, [chip], uncapped).seconds[0]

    def density(chip):
        return chip.tdp_w / (chip.sm_count * chip.boost_clock_mhz / 1000)

    assert density(l4) < density(t4) < 2.0
    assert slowdown(l4) == pytest.approx((2.0 / density(l4)) ** 0.5, rel=0.02)
    assert slowdown(l4) / slowdown(t4) == pytest.approx((density(t4) / density(l4)) ** 0.5, rel=0.02)


def test_cdna_runs_exact_fp32_gemms_on_its_matrix_units(cat):
    """MI100 and MI200 execute exact fp32 GEMMs on matrix cores at twice the vector rate, so a
    strict-fp32 matmul (PyTorch's default, never TF32) beats the vector peak there; an A100 runs
    the same matmul on its fp32 pipelines, and CDNA 3 (fp32 matrix rate = vector rate) gains nothing."""
    from perdollar.predict.params import shipped_model

    strict = dataclasses.replace(big_matmul("fp32"), count=16, flops=16 * big_matmul("fp32").flops)
    profile = make_profile([strict], precision="fp32")
    as_cuda = dataclasses.replace(shipped_model().params, rocm_efficiency=1.0)  # the hardware alone
    for key in ("MI100", "MI210", "MI250"):
        acc = cat.accelerators[key]
        achieved = strict.flops / device_steps(profile, [acc], as_cuda).seconds[0]
        assert achieved > 1.3 * acc.peak_fp32_tflops * 1e12, key
    for key in ("A100-SXM4-80GB", "MI300X"):
        acc = cat.accelerators[key]
        achieved = strict.flops / device_steps(profile, [acc], as_cuda).seconds[0]
        assert achieved < acc.peak_fp32_tflops * 1e12, key


def test_rocm_chips_reach_the_rocm_share_of_compute_and_memory_rates_and_cuda_chips_all_of_it(cat):
    """The same MI300X and H100 profiles with rocm_efficiency 1 and 0.5: every ROCm operator time
    doubles, whether compute- or memory-bound, and no CUDA time moves."""
    from perdollar.predict.params import ModelParams

    copy = OperatorRecord("aten.copy_", "copy", "forward", 0.0, 2.0**30, 2.0**30, "bf16")
    profile = make_profile([big_matmul("bf16"), copy])
    chips = [cat.accelerators["MI300X"], cat.accelerators["H100-SXM5-80GB"]]
    full = ModelParams(rocm_efficiency=1.0, step_overhead_s=1e-9, kernel_overhead_s=1e-9)
    half = dataclasses.replace(full, rocm_efficiency=0.5)
    at_full, at_half = device_steps(profile, chips, full), device_steps(profile, chips, half)
    assert at_half.compute_bound[0] == pytest.approx(2 * at_full.compute_bound[0], rel=1e-6)
    assert at_half.seconds[0] == pytest.approx(2 * at_full.seconds[0], rel=1e-3)
    assert at_half.seconds[1] == pytest.approx(at_full.seconds[1], rel=1e-9)
    assert at_half.compute_bound[1] == pytest.approx(at_full.compute_bound[1], rel=1e-9)


@pytest.mark.parametrize(("key", "limit", "plain"), [("RTX-A6000", 0.73, "8.0"), ("K80", 2 / 3, "6.0")])
def test_fp32_issue_limit_lowers_fp32_gemms_of_chips_that_count_unfillable_lanes(cat, key, limit, plain):
    """An RTX A6000 (8.6) counts its fp32-or-int32 datapath in its fp32 peak, a K80 (3.7) the 64
    lanes per SM its schedulers fill only by dual issue; the same chip with a plain compute
    capability runs an fp32 GEMM 1/limit faster, and nothing else changes."""
    from perdollar.predict.params import ModelParams

    params = ModelParams(step_overhead_s=1e-9, kernel_overhead_s=2e-6)
    chip = cat.accelerators[key]
    plain_chip = dataclasses.replace(chip, key=f"{key}-as-{plain}", compute_capability=plain)
    fp32 = make_profile([big_matmul("fp32")], precision="fp32")
    limited, unlimited = device_steps(fp32, [chip, plain_chip], params).compute_bound
    assert limited / unlimited == pytest.approx(1 / limit, rel=1e-6)
    copy = device_steps(make_profile([big_copy()]), [chip, plain_chip], params).memory_bound
    assert copy[0] == pytest.approx(copy[1])
    if chip.peak_fp16_tflops:
        fp16 = device_steps(make_profile([big_matmul("fp16")]), [chip, plain_chip], params).compute_bound
        assert fp16[0] == pytest.approx(fp16[1])


def test_rocm_band_adds_the_spread_of_the_published_rocm_shares(cat):
    """A spec-only MI300X band is the spec errors widened, in quadrature, by how far the published
    ROCm shares lie from the shipped one; an H100's is the spec errors alone; the catalog-wide
    frame gives the ND MI300X instance the same band; a measurement on the MI300X is not widened."""
    from perdollar.predict.params import ROCM_SHARE_RANGE, shipped_model

    model = shipped_model()
    spec, share = model.errors["spec"], model.params.rocm_efficiency
    profile = make_profile([big_matmul(), big_copy()])
    mi300x, h100 = cat.accelerators["MI300X"], cat.accelerators["H100-SXM5-80GB"]

    def log_width(estimate):
        return math.log(estimate.high / estimate.low)

    assert log_width(predict_step_time(profile, h100)) == pytest.approx(spec.q90 - spec.q10)
    widened = math.hypot(spec.q90, math.log(ROCM_SHARE_RANGE[1] / share)) + math.hypot(
        spec.q10, math.log(ROCM_SHARE_RANGE[0] / share)
    )
    amd = predict_step_time(profile, mi300x)
    assert log_width(amd) == pytest.approx(widened) and widened > spec.q90 - spec.q10 + 0.1
    frame = predict_frame(profile, cat)
    row = frame[frame.accelerator_key == "MI300X"].iloc[0]
    assert math.log(row.samples_per_second_high / row.samples_per_second_low) == pytest.approx(widened)
    measurement = _measurement(profile, "MI300X", rate=profile.batch_size / amd.seconds)
    measured = predict_step_time(profile, mi300x, Calibration.from_measurements(profile, [measurement], cat))
    assert measured.basis == "measured"
    measured_errors = model.errors["measured"]
    assert log_width(measured) == pytest.approx(measured_errors.q90 - measured_errors.q10)
