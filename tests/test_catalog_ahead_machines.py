"""Machines a cloud sells only ahead: in the catalog with their hardware, ranked in that market alone."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.catalog.markets import bundled_prices

AHEAD_ONLY = ("p5e.48xlarge", "trn2.48xlarge")
PUBLISHED = {(p.instance_type, p.region): p.price_per_hour for p in bundled_prices() if p.cloud == "aws"}


def test_capacity_block_only_machines_carry_their_ec2_hardware_and_no_offer() -> None:
    cat = catalog.load()
    p5e, trn2 = cat.instance("p5e.48xlarge", "aws"), cat.instance("trn2.48xlarge", "aws")
    # EC2 instance-type data: 192 vCPUs, 2 TiB, 8 H200 of 141 GiB, 3,200 Gbps over 32 EFA interfaces
    assert (p5e.vcpus, p5e.memory_gib, p5e.accelerator_key, p5e.accelerator_count) == (
        192, 2048, "H200-SXM-141GB", 8
    )  # fmt: skip
    assert p5e.accelerator_memory_gib_total == pytest.approx(1128) and p5e.network_gbps == 3200
    assert p5e.efa_interfaces == 32
    # 16 Trainium2 chips; their memory is the chip table's 96 GiB each
    assert (trn2.accelerator_key, trn2.accelerator_count, trn2.accelerator_memory_gib_total) == (
        "Trainium2", 16, 16 * cat.accelerators["Trainium2"].memory_gib
    )  # fmt: skip
    # Neither is sold on demand or spot, so the snapshot holds no offer for them.
    assert not [o for o in cat.offers if o.instance_type in AHEAD_ONLY]


def _estimates(market: str) -> list[dict]:
    result = run_perdollar("recommend", "llama-3.1-8b", "--tokens", "2e10", "--market", market,
                           "--cloud", "aws", "--top", "60", "--json", "--no-store")  # fmt: skip
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["estimates"]


def test_a_capacity_block_question_ranks_them_at_their_published_block_prices() -> None:
    rows = [
        e for e in _estimates("capacity-block") if e["instance_type"] in ("p5e.48xlarge", "trn2.48xlarge")
    ]
    assert {e["instance_type"] for e in rows} == {"p5e.48xlarge", "trn2.48xlarge"}
    for e in rows:
        assert e["feasible"] and e["market"] == "capacity-block"
        assert e["price_per_hour"] == pytest.approx(PUBLISHED[(e["instance_type"], e["region"])] * e["nodes"])
    # On demand they are not sold, so that question never ranks them.
    assert not [e for e in _estimates("on-demand") if e["instance_type"] in AHEAD_ONLY]


def test_mi355x_has_its_specs_and_runs_on_rocm() -> None:
    chip = catalog.load().accelerators["MI355X"]
    assert (chip.memory_gib, chip.memory_bandwidth_gbps, chip.tdp_w, chip.sm_count) == (288, 8000, 1400, 256)
    # 256 CUs × 8,192 FP8 FLOP per clock × 2.4 GHz, FP16 at half that
    assert chip.peak_fp8_tflops == pytest.approx(256 * 8192 * 2.4e9 / 1e12, rel=1e-4)
    assert chip.peak_bf16_tflops == pytest.approx(chip.peak_fp8_tflops / 2, rel=1e-4)
    assert chip.software_stack == "rocm" and "ROCm documentation" in chip.source
