"""`recommend LLM --inference`: deployments ranked by $ per million tokens within TTFT and TPOT."""

from __future__ import annotations

import json

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod


def deployments(*args: str) -> dict:
    completed = run_perdollar("recommend", *args, "--json", "--no-store", columns=200)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def test_an_8b_model_is_ranked_across_the_clouds_within_its_slos() -> None:
    result = deployments(
        "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000", "--output-tokens", "300",
        "--ttft-p99-ms", "500", "--tpot-p99-ms", "50", "--top", "300",
    )  # fmt: skip
    rows = result["deployments"]
    assert {row["cloud"] for row in rows} >= {"aws", "gcp", "azure"}
    assert all(row["ttft_p99_ms"] <= 500 + 1e-6 and row["tpot_p99_ms"] <= 50 + 1e-6 for row in rows)
    costs = [row["usd_per_million_output_tokens"] for row in rows]
    assert costs == sorted(costs) and costs[0] > 0
    top = rows[0]
    # $ per million output tokens is the whole bill over the output tokens served.
    assert (
        top["usd_per_million_output_tokens"] == (top["deployment_price_per_hour"] / (20 * 300 * 3600) * 1e6)
        or abs(top["usd_per_million_output_tokens"] / (top["deployment_price_per_hour"] / 21.6) - 1) < 1e-9
    )
    assert (
        top["replicas"] >= 1 and top["tensor_parallel"] >= 1 and top["precision"] in ("fp16", "fp8", "int4")
    )
    assert "per million output tokens" in result["explanation"]


def test_a_70b_model_needs_tensor_parallel_on_80_gb_gpus_in_fp16_and_int4_is_offered() -> None:
    cat = catalog_mod.load()
    result = deployments("llama-3.1-70b", "--inference", "--rps", "5", "--tpot-p99-ms", "100", "--top", "400")
    rows = result["deployments"]
    eighty = [
        r
        for r in rows
        if r["precision"] == "fp16" and 70 <= cat.accelerators[r["accelerator_key"]].memory_gib <= 80
    ]
    assert eighty and all(r["tensor_parallel"] >= 2 for r in eighty)
    reasons = [e["reason"] for e in result["excluded"] if e["accelerator"] == "H100-SXM5-80GB"]
    assert any("do not fit" in reason and "tensor parallel 1" in reason for reason in reasons)
    assert any(r["precision"] == "int4" for r in rows)


def test_a_serving_question_without_a_rate_is_a_one_line_error() -> None:
    completed = run_perdollar(
        "recommend", "llama-3.1-8b", "--inference", "--ttft-p99-ms", "500", "--no-store", columns=200
    )
    assert completed.returncode == 2 and "needs one rate" in completed.stderr
    assert "Traceback" not in completed.stderr
