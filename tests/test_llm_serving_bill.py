"""A language model's serving bill: energy and carbon per million tokens, the carbon objective, and
the weights every instance pulls from where they are stored."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from cli_runner import run_perdollar
from perdollar.catalog import load
from perdollar.catalog.bill_data import EnergyFactors, GridIntensity
from perdollar.price.bill import DataPlacement
from perdollar.price.llm_serving_bill import weights_pull_columns
from perdollar.price.llm_serving_energy import (
    DECODE_BUSY_FLOOR,
    DECODE_BUSY_PER_COMPUTE,
    busy_share,
    serving_energy_columns,
)
from perdollar.workload.llm import load_llm_workload

H100 = "H100-SXM5-80GB"
SERVE = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
         "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--json", "--no-store",
         "--top", "40")  # fmt: skip


def _deployment(**changes: object) -> pd.DataFrame:
    row = {
        "cloud": "aws", "region": "us-east-1", "accelerator_key": H100, "precision": "fp16",
        "tensor_parallel": 1, "replicas": 2, "instances": 1, "accelerator_count": 8, "rate_per_replica": 1.0,
        "batch": 10.0, "vcpus": 192.0, "output_tokens_per_second": 300.0, "input_tokens_per_second": 200.0,
    }  # fmt: skip
    return pd.DataFrame([{**row, **changes}])


def test_energy_per_million_tokens_of_a_hand_computed_deployment() -> None:
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    chip = load().accelerators[H100]
    factors = EnergyFactors(pue={"aws": 1.2}, accelerator_idle_fraction=0.1, host_idle_w_per_vcpu=1.0,
                            host_busy_w_per_vcpu=3.0, host_utilisation=0.5, as_of="")  # fmt: skip
    grid = {("aws", "us-east-1"): GridIntensity("aws", "us-east-1", 400.0, "test", 2024)}
    out = serving_energy_columns(_deployment(), arch, input_tokens=100, output_tokens=150,
                                 accelerators={H100: chip}, factors=factors, grid=grid)  # fmt: skip
    # One request: 100 prompt tokens (mean context 50) and 150 output tokens (mean context 175);
    # attention is 4 × 32 layers × 32 heads × 128 per token of context; the products count every
    # parameter, the input embedding too (as the busy-share fit did).
    attention = 4 * 32 * 32 * 128
    params = arch.active_params + arch.lookup_params
    flops = 100 * (2 * params + attention * 50) + 150 * (2 * params + attention * 175)
    compute_share = 1.0 * flops / (989.5e12)
    busy = DECODE_BUSY_FLOOR + DECODE_BUSY_PER_COMPUTE * compute_share
    assert busy < 1.0
    # Two busy H100s, six idle ones in the instance, 192 vCPUs at 2 W, PUE 1.2.
    watts = 2 * 700 * (0.1 + 0.9 * busy) + 6 * 700 * 0.1 + 192 * 2.0
    kw = watts * 1.2 / 1000
    row = out.iloc[0]
    assert row["busy_share"] == pytest.approx(busy)
    assert row["power_kw"] == pytest.approx(kw)
    assert row["energy_kwh_per_million_output_tokens"] == pytest.approx(kw * 1e6 / (300 * 3600))
    assert row["energy_kwh_per_million_tokens"] == pytest.approx(kw * 1e6 / (500 * 3600))
    assert row["co2e_g_per_million_tokens"] == pytest.approx(kw * 1e6 / (500 * 3600) * 400)


def test_busy_share_rises_with_compute_and_falls_below_one_running_sequence() -> None:
    share = busy_share(np.array([0.0, 0.02, 0.05, 0.5, 0.0]), np.array([8.0, 8.0, 8.0, 8.0, 0.25]))
    assert share[0] == pytest.approx(DECODE_BUSY_FLOOR)
    assert share[0] < share[1] < share[2] < share[3] == 1.0
    assert share[4] == pytest.approx(DECODE_BUSY_FLOOR / 4)


def test_weights_pulled_per_instance_with_egress_by_destination() -> None:
    frame = pd.DataFrame(
        {
            "cloud": ["aws", "aws", "gcp"],
            "region": ["us-east-1", "us-west-2", "us-central1"],
            "precision": ["fp16", "fp16", "fp8"],
            "instances": [2, 2, 3],
            "network_gbps": [100.0, 100.0, 5.0],
        }
    )
    placement = DataPlacement(size_bytes=16e9, cloud="aws", region="us-east-1")
    out = weights_pull_columns(frame, {"fp16": 16e9, "fp8": 8e9}, placement)
    assert out["weights_gb"].tolist() == pytest.approx([16.0, 16.0, 8.0])
    # Same region: free; another AWS region: $0.02/GB over both instances' 32 GB; GCP: the
    # internet's first tier, $0.09/GB over three instances' 24 GB.
    assert out["weights_egress_usd"].tolist() == pytest.approx([0.0, 0.64, 2.16])
    # 16 GB at AWS's 10 Gbit/s staged copy; 8 GB at the GCP instance's 5 Gbit/s network.
    assert out["weights_load_s"].tolist() == pytest.approx([12.8, 12.8, 12.8])
    unplaced = weights_pull_columns(frame, {"fp16": 16e9, "fp8": 8e9}, DataPlacement())
    assert unplaced["weights_egress_usd"].sum() == 0 and unplaced["weights_load_s"].sum() == 0


def _answer(*extra: str) -> dict:
    done = run_perdollar(*SERVE, *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _deployments(*extra: str) -> list[dict]:
    return _answer(*extra)["deployments"]


def test_carbon_objective_ranks_deployments_by_emissions_per_token() -> None:
    by_cost, by_carbon = _answer(), _answer("--objective", "carbon")
    cheapest, greenest = by_cost["deployments"], by_carbon["deployments"]
    # Each ranking names the other end of the trade.
    assert by_carbon["explanation"].startswith("Lowest emissions: " + greenest[0]["label"])
    assert f"The cheapest: {cheapest[0]['label']}: " in by_carbon["explanation"]
    assert "The lowest-emission deployment: " in by_cost["explanation"]
    grams = [row["co2e_g_per_million_output_tokens"] for row in greenest]
    assert grams == sorted(grams) and all(g > 0 for g in grams)
    dollars = [row["usd_per_million_output_tokens"] for row in cheapest]
    assert dollars == sorted(dollars)
    assert greenest[0]["co2e_g_per_million_output_tokens"] < cheapest[0]["co2e_g_per_million_output_tokens"]
    # Chips with no published board power (TPU slices) carry no energy figure rather than a guess.
    powered = [row for row in cheapest if row["energy_kwh_per_million_tokens"] is not None]
    assert powered and all(not row["accelerator_key"].startswith("TPU") for row in powered)
    for row in powered:
        assert 0 < row["energy_kwh_per_million_tokens"] < row["energy_kwh_per_million_output_tokens"]
    # A region the grid table does not list has no carbon figure rather than a guessed one.
    known = [row for row in powered if row["grid_gco2e_per_kwh"] is not None]
    assert known and all(row["co2e_g_per_million_tokens"] > 0 for row in known)
    assert all(row["co2e_g_per_million_tokens"] is None for row in cheapest if row not in known)
    assert all(row["co2e_g_per_million_tokens"] is None for row in cheapest if row not in powered)


def test_stored_weights_are_pulled_by_every_instance() -> None:
    rows = _deployments("--data-region", "us-east-1", "--region", "us-east-1", "--region", "us-central1")
    home = [r for r in rows if (r["cloud"], r["region"]) == ("aws", "us-east-1")]
    away = [r for r in rows if r["cloud"] != "aws"]
    assert home and away
    assert all(r["weights_egress_usd"] == 0 for r in home)
    assert all(r["weights_egress_usd"] > 0 and r["weights_load_s"] > 0 for r in away)
    fp16 = [r for r in rows if r["precision"] == "fp16"]
    assert fp16 and all(r["weights_gb"] == pytest.approx(16.06, rel=0.01) for r in fp16)
