"""The serving explanation reads what a format or an engine is worth from plausible prices only."""

from __future__ import annotations

import pandas as pd

from perdollar.catalog.price_outliers import PRICE_OUTLIER_FLAG
from perdollar.price.network_serving import ranked
from perdollar.select.llm_serving import explain_llm_serving


def _row(instance: str, precision: str, engine: str, usd: float, flags: str = "") -> dict[str, object]:
    return {
        "feasible": True, "cloud": "aws", "region": "us-east-1", "market": "spot", "instance_type": instance,
        "instances": 1, "replicas": 1, "tensor_parallel": 1, "accelerator_key": instance,
        "precision": precision,
        "engine": engine, "basis": "spec", "ttft_p99_ms": 300.0, "tpot_p99_ms": 30.0,
        "usd_per_million_output_tokens": usd, "usd_per_million_tokens": usd / 6, "flags": flags,
        "co2e_g_per_million_output_tokens": float("nan"),
    }  # fmt: skip


def _explained(rows: list[dict[str, object]]) -> str:
    frame = ranked(pd.DataFrame(rows), "usd_per_million_output_tokens", "tpot_p99_ms")
    return explain_llm_serving(frame, 5.0, "TPOT p99 ≤ 50 ms")


def test_an_outlier_priced_format_and_engine_are_not_called_the_cheapest() -> None:
    rows = [
        _row("g6e.xlarge", "fp8", "vllm", 0.225),
        _row("g6e.2xlarge", "int4", "sglang", 0.300),
        _row("tpu-v6e-1", "fp16", "jetstream", 0.050, flags=PRICE_OUTLIER_FLAG),  # a placeholder price
    ]
    text = _explained(rows)
    assert text.startswith("Cheapest: 1x g6e.xlarge spot")
    assert "Best cost per million output tokens by format: fp8 $0.225, int4 $0.3." in text
    assert "by engine: vllm $0.225, sglang $0.3 (1.3×)." in text
    assert "jetstream" not in text and "$0.05" not in text


def test_the_same_rows_with_a_plausible_price_count_in_both_lines() -> None:
    rows = [
        _row("g6e.xlarge", "fp8", "vllm", 0.225),
        _row("g6e.2xlarge", "int4", "sglang", 0.300),
        _row("tpu-v6e-1", "fp16", "jetstream", 0.050),
    ]
    text = _explained(rows)
    assert "by format: fp16 $0.05, fp8 $0.225, int4 $0.3." in text
    assert "by engine: jetstream $0.05, vllm $0.225 (4.5×), sglang $0.3 (6×)." in text
