"""Fractional and shared accelerators: counts and memory per VM as the clouds document them."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from perdollar import catalog
from perdollar.predict import predict_frame
from perdollar.profile.model import MemoryBreakdown, OperatorRecord, Profile

DOCUMENTED = Path(catalog.__file__).parent / "documented_accelerators.csv"

# Instance types whose recorded GPU memory is not chip memory × count, each for a documented reason.
EXPLAINED_MEMORY_DIFFERENCES = {
    # AWS reports 2,100 GiB of GPU memory for 8 B300s (262.5 GiB usable each); the chip table has
    # NVIDIA's 288 GB per device.
    ("aws", "p6-b300.48xlarge"),
    # Hyperstack's price page lists 192 GB per B200 (the HBM3e stacks' raw size); the chip table has
    # NVIDIA's 180 GB.
    ("hyperstack", "b200-x1"),
}


def _memory_disagreements(cat: catalog.Catalog) -> set[tuple[str, str]]:
    found = set()
    for key, instance in cat.instance_types.items():
        chip = cat.accelerator_of(instance)
        if chip is None or not instance.accelerator_count:
            continue
        expected = chip.memory_gib * instance.accelerator_count
        if abs(expected - instance.accelerator_memory_gib_total) > 0.02 * expected:
            found.add(key)
    return found


def test_every_instance_has_chip_memory_times_count_or_an_explained_difference() -> None:
    assert _memory_disagreements(catalog.load()) == EXPLAINED_MEMORY_DIFFERENCES


def test_documented_sizes_are_what_the_catalog_records() -> None:
    cat = catalog.load()
    rows = list(csv.DictReader(DOCUMENTED.open()))
    assert rows, "the documented sizes table is empty"
    for row in rows:
        instance = cat.instance(row["instance_type"], row["cloud"])
        assert instance.accelerator_count == pytest.approx(float(row["accelerator_count"]))
        assert instance.accelerator_memory_gib_total == pytest.approx(
            float(row["accelerator_memory_gib_total"])
        )
        # A machine retired since (the K80 p2 sizes) says so where its size row gives no reason.
        assert instance.excluded_reason == row["excluded_reason"] or (
            not row["excluded_reason"] and instance.excluded_reason.startswith("retired: ")
        )
        assert row["source"].startswith(("Microsoft Learn", "Amazon EC2"))


def test_mi25_slices_are_eighths_and_excluded_with_a_reason() -> None:
    cat = catalog.load()
    slice_ = cat.instance("Standard_NV4as_v4")
    # Azure: 1/8 of an MI25 and 2 GiB of its 16 GiB
    assert (slice_.accelerator_count, slice_.accelerator_memory_gib_total) == (0.125, 2.0)
    assert "virtual desktops" in slice_.excluded_reason
    assert cat.instance("p2.16xlarge").accelerator_count == 16  # 8 K80 boards, two GPUs each


def _profile() -> Profile:
    m = n = k = 4096
    matmul = OperatorRecord(
        "aten.mm", "matmul", "forward", 2.0 * m * n * k, 2.0 * (m * k + k * n), 2.0 * m * n, "fp16",
        count=1, gemm_mnk=(m, n, k),
    )  # fmt: skip
    return Profile(
        workload_name="hand-built", workload_fingerprint="shares", kind="train", batch_size=32,
        precision="amp-fp16", sample_unit="samples", params=25_000_000, trainable_params=25_000_000,
        operators=(matmul,),
        memory=MemoryBreakdown(
            weights=1e8, gradients=1e8, optimizer_state=2e8, activations=5e9, workspace=1e8
        ),
        gradient_bytes=1e8, input_bytes_per_sample=150_528.0,
    )  # fmt: skip


def test_ranking_inputs_use_the_share_and_the_exclusion() -> None:
    frame = predict_frame(_profile(), catalog.load()).set_index("instance_type")
    whole, sixth = frame.loc["Standard_NV36ads_A10_v5"], frame.loc["Standard_NV6ads_A10_v5"]
    # A sixth of an A10 does a sixth of the work: compute time × 1/0.167
    assert sixth["compute_time_s"] == pytest.approx(whole["compute_time_s"] / 0.167, rel=1e-6)
    # 5.5 GB of training state: more than 0.9 × 24 GiB × 0.167 = 3.6 GiB, well within 0.9 × 24 GiB
    assert bool(whole["fits"]) and not bool(sixth["fits"])
    assert sixth["excluded_reason"] == ""
    assert "virtual desktops" in frame.loc["Standard_NV4as_v4", "excluded_reason"]


def test_azure_rdma_sizes_carry_their_infiniband_fabric_with_a_source() -> None:
    cat = catalog.load()
    sources = cat.manifest["network_gbps_sources"]
    rdma = sorted(
        name
        for cloud, name in cat.instance_types
        if cloud == "azure"
        and name.startswith("Standard_ND")
        and re.fullmatch(r"\d+[a-z]*r[a-z]*", name.split("_")[1][2:])
    )
    assert "Standard_ND96isr_H200_v5" in rdma and "Standard_ND96amsr_A100_v4" in rdma
    for name in rdma:
        assert "InfiniBand" in sources[f"azure:{name}"] and "Microsoft Learn" in sources[f"azure:{name}"]
    # 8 GPUs × 400 Gb/s NDR, and 8 × 200 Gb/s HDR, as Azure documents them
    assert cat.instance("Standard_ND96isr_H200_v5").network_gbps == 3200
    assert cat.instance("Standard_ND96amsr_A100_v4").network_gbps == 1600
