"""Each checklist item: pass / warn / fail / unknown from measured evidence, with a fix."""

from __future__ import annotations

import dataclasses

import pytest

from fixtures.store.samples import CPU_HOST, make_measurement
from perdollar.report.checklist import (
    CheckedMachine,
    Evidence,
    check_cpu_ratio,
    check_input_bound,
    check_memory_headroom,
    check_mixed_precision,
    check_network_ingest,
    check_scaling,
    check_utilisation,
    evaluate,
)
from perdollar.report.checklist_inputs import evidence_from_measurements, max_batch_for

GPU = CheckedMachine(
    name="aws g5.xlarge",
    vcpus=4,
    accelerators=1,
    accelerator_name="A10G",
    memory_bytes_per_device=24 * 2**30,
    supports_bf16=True,
    network_gbps=10,
)


@pytest.mark.parametrize(("full_rate", "status"), [(990.0, "pass"), (900.0, "warn"), (500.0, "fail")])
def test_input_bound_compares_full_with_cached_input(full_rate: float, status: str) -> None:
    item = check_input_bound(
        Evidence(cached=make_measurement(rate=1000.0), full=make_measurement(rate=full_rate, mode="full"))
    )
    assert item.status == status
    assert f"{full_rate:,.0f} samples/s" in item.evidence and "1,000 samples/s" in item.evidence
    assert (item.fix == "") == (status == "pass")


def test_input_bound_is_unknown_without_a_full_run() -> None:
    item = check_input_bound(Evidence(cached=make_measurement()))
    assert item.status == "unknown" and "--mode full" in item.fix


@pytest.mark.parametrize(("busy", "status"), [(95.0, "pass"), (60.0, "warn"), (20.0, "fail")])
def test_gpu_utilisation_below_80_percent_is_flagged(busy: float, status: str) -> None:
    measurement = make_measurement(utilization={"gpu_percent": busy, "cpu_percent": 30.0})
    item = check_utilisation(Evidence(cached=measurement), GPU)
    assert item.status == status and f"GPU busy {busy:.0f}%" in item.evidence


def test_cpu_host_utilisation_uses_the_cpu_and_missing_samples_are_unknown() -> None:
    cpu = CheckedMachine(name="this host", vcpus=2, accelerators=0)
    assert check_utilisation(Evidence(cached=make_measurement()), cpu).evidence.startswith("CPU")
    assert check_utilisation(Evidence(cached=make_measurement(utilization={})), GPU).status == "unknown"


def test_memory_headroom_suggests_a_larger_batch() -> None:
    small = make_measurement(peak_memory_bytes=4 * 2**30)
    item = check_memory_headroom(Evidence(cached=small, max_batch_that_fits=300), GPU)
    assert item.status == "warn" and "17%" in item.evidence and "e.g. 300" in item.fix
    full = make_measurement(peak_memory_bytes=20 * 2**30)
    assert check_memory_headroom(Evidence(cached=full), GPU).status == "pass"


def test_mixed_precision_only_where_bf16_is_supported() -> None:
    fp32 = Evidence(cached=make_measurement())
    assert check_mixed_precision(fp32, GPU).status == "warn"
    assert "--precision bf16" in check_mixed_precision(fp32, GPU).fix
    v100 = dataclasses.replace(GPU, accelerator_name="V100", supports_bf16=False)
    assert check_mixed_precision(fp32, v100).status == "pass"
    assert check_mixed_precision(Evidence(precision="bf16"), GPU).status == "pass"
    assert check_mixed_precision(fp32, dataclasses.replace(GPU, supports_bf16=None)).status == "unknown"


def test_cpu_ratio_compares_input_cores_needed_with_vcpus_per_accelerator() -> None:
    # 2-core host: the input pipeline alone makes 1,000 samples/s, i.e. 500 per core.
    data_only = make_measurement(mode="data-only", rate=1000.0)
    evidence = Evidence(cached=make_measurement(rate=1000.0), data_only=data_only)
    assert data_only.host.cpu_cores == 2
    # Feeding 1,000 samples/s needs 2 cores per device; g5.xlarge has 4 → pass; a 2-vCPU one → warn.
    assert check_cpu_ratio(evidence, GPU).status == "pass"
    assert check_cpu_ratio(evidence, dataclasses.replace(GPU, vcpus=2.5)).status == "warn"
    assert check_cpu_ratio(evidence, dataclasses.replace(GPU, vcpus=8, accelerators=8)).status == "fail"
    assert "cores per device" in check_cpu_ratio(evidence, GPU).evidence


def test_an_instance_is_fed_at_its_predicted_rate_not_at_this_hosts_measured_one() -> None:
    # This host trains at 1,000 samples/s; the instance's A10G is predicted at 10,000 per device.
    evidence = Evidence(
        cached=make_measurement(rate=1000.0),
        data_only=make_measurement(mode="data-only", rate=1000.0),
        input_bytes_per_sample=600_000,
    )
    instance = dataclasses.replace(GPU, predicted_samples_per_second=10_000.0)
    # 10,000 samples/s at 500 per core needs 20 cores; the instance has 4.
    cpu = check_cpu_ratio(evidence, instance)
    assert cpu.status == "fail" and "10,000 samples/s (predicted on A10G)" in cpu.evidence
    assert "20 cores per device" in cpu.evidence
    network = check_network_ingest(evidence, instance)  # 10,000 × 600 kB × 8 = 48 Gbit/s of 10
    assert network.status == "fail" and "48 Gbit/s of 10 Gbit/s" in network.evidence
    assert "predicted on A10G" in network.evidence
    # Judged against this host (no prediction), the measured rate is used and said to be measured.
    assert (
        check_cpu_ratio(evidence, GPU).status == "pass"
        and "predicted" not in check_cpu_ratio(evidence, GPU).evidence
    )


def test_scaling_efficiency_of_a_multi_process_run() -> None:
    multi = make_measurement(nproc=4, scaling_efficiency=0.62)
    item = check_scaling(Evidence(multi=multi))
    assert item.status == "fail" and "62%" in item.evidence and "4 processes" in item.evidence
    assert check_scaling(Evidence()).status == "unknown"


@pytest.mark.parametrize("efficiency", [4.07, 12.52, 1.25])
def test_a_scaling_efficiency_over_100_percent_is_no_pass(efficiency: float) -> None:
    item = check_scaling(Evidence(multi=make_measurement(nproc=2, scaling_efficiency=efficiency)))
    assert item.status == "warn" and f"{efficiency:.0%}" in item.evidence
    assert "cannot be real scaling" in item.evidence and "measure again" in item.fix


def test_network_ingest_against_the_instance_bandwidth() -> None:
    evidence = Evidence(cached=make_measurement(rate=1000.0), input_bytes_per_sample=600_000)
    item = check_network_ingest(evidence, GPU)  # 1000 × 600 kB × 8 = 4.8 Gbit/s of 10
    assert item.status == "pass" and "4.8 Gbit/s of 10 Gbit/s" in item.evidence
    assert check_network_ingest(evidence, dataclasses.replace(GPU, network_gbps=5)).status == "warn"
    assert check_network_ingest(evidence, dataclasses.replace(GPU, network_gbps=2)).status == "fail"
    assert check_network_ingest(evidence, dataclasses.replace(GPU, network_gbps=None)).status == "unknown"


def test_evidence_takes_the_newest_successful_run_per_mode_and_evaluates_all_items() -> None:
    runs = [
        make_measurement(rate=900.0, started_at="2026-06-01T00:00:00+00:00"),
        make_measurement(rate=1000.0, started_at="2026-06-02T00:00:00+00:00"),
        make_measurement(status="oom", started_at="2026-06-03T00:00:00+00:00"),
        make_measurement(mode="full", rate=950.0),
        make_measurement(nproc=2, scaling_efficiency=0.95),
    ]
    evidence = evidence_from_measurements(runs)
    assert evidence.cached is not None and evidence.cached.samples_per_second.median == 1000.0
    assert evidence.multi is not None and evidence.data_only is None
    items = evaluate(evidence, CheckedMachine(name="this host", vcpus=CPU_HOST.cpu_cores, accelerators=0))
    assert [i.key for i in items] == [
        "input-bound",
        "utilisation",
        "memory-headroom",
        "mixed-precision",
        "cpu-ratio",
        "scaling",
        "network-ingest",
    ]
    assert {i.key: i.status for i in items}["scaling"] == "pass"


def test_max_batch_for_memory() -> None:
    assert max_batch_for(static_bytes=4e9, per_sample_bytes=1e8, capacity_bytes=10e9) == 50
    assert max_batch_for(static_bytes=20e9, per_sample_bytes=1e8, capacity_bytes=10e9) is None


def test_memory_fix_suggests_at_most_eight_times_the_batch() -> None:
    tiny = make_measurement(peak_memory_bytes=2**20)  # batch 64, 1 MiB of 24 GiB
    item = check_memory_headroom(Evidence(cached=tiny, max_batch_that_fits=270_000), GPU)
    assert "e.g. 512" in item.fix and "up to batch 270,000 fits" in item.evidence
