"""The GPU ground truth for mixture-of-experts layers (benchmarks/gpu_moe_layers.py) runs end to end
in its CPU mode, so it is ready when a GPU is at hand, and times the layer each model describes."""

from __future__ import annotations

import csv
import subprocess
import sys

import torch

from benchmark_scripts import BENCHMARKS, benchmark_module


def test_the_dry_run_writes_every_model_implementation_and_pass(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "moe_layers.csv"
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "gpu_moe_layers.py"), str(out), "--dry-run"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(out.open()))
    assert {r["model"] for r in rows} == {"qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3"}
    assert {r["pass"] for r in rows} == {"forward", "forward+backward"}
    assert "loop" in {r["implementation"] for r in rows}
    for row in rows:
        assert float(row["seconds"]) > 0 and float(row["expert_tflops"]) > 0
        # balanced routing: every expert multiplies exactly the sweep's rows
        assert int(row["tokens"]) * int(row["top_k"]) == int(row["rows_per_expert"]) * int(row["experts"])
    assert sorted({int(r["rows_per_expert"]) for r in rows}) == [1, 2, 4]


def test_the_layer_shapes_are_the_bundled_architectures() -> None:
    script = benchmark_module("gpu_moe_layers")
    qwen, oss, deepseek = (script.layer_shape(m) for m in ("qwen3-30b-a3b", "gpt-oss-20b", "deepseek-v3"))
    assert (qwen.hidden, qwen.intermediate, qwen.experts, qwen.top_k) == (2048, 768, 128, 8)
    assert (oss.hidden, oss.intermediate, oss.experts, oss.top_k) == (2880, 2880, 32, 4)
    assert (deepseek.hidden, deepseek.intermediate, deepseek.experts, deepseek.top_k) == (7168, 2048, 256, 8)


def test_the_grouped_product_and_the_loop_compute_the_same_layer() -> None:
    script = benchmark_module("gpu_moe_layers")
    shape = script.layer_shape("qwen3-30b-a3b", dry_run=True)
    layer = script.MoELayer(shape, torch.device("cpu"), torch.bfloat16)
    tokens = 4 * shape.experts // shape.top_k
    x = torch.randn(tokens, shape.hidden, dtype=torch.bfloat16)
    experts = script.balanced_routing(tokens, shape, torch.device("cpu"))
    assert torch.bincount(experts.reshape(-1), minlength=shape.experts).tolist() == [4] * shape.experts
    looped = layer(x, experts, script.loop_products)
    if hasattr(torch, "_grouped_mm"):
        grouped = layer(x, experts, script.grouped_products)
        assert torch.allclose(grouped.float(), looped.float(), atol=1e-2, rtol=1e-2)
