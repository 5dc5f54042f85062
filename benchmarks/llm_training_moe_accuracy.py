"""Accuracy of perdollar's mixture-of-experts training prediction on published MoE training runs.

    PYTHONPATH=src python benchmarks/llm_training_moe_accuracy.py [--csv FILE]

Every row of ``published_llm_training_moe.csv`` (torchtitan's Qwen3-30B-A3B runs on B200, DeepEP's
scaling tables and its default expert parallelism; torchtitan's DeepSeek-V3 16B on 8 H100s, from a
training log, and on 8 B200s, from another team's tuning notes; the Megatron MoE model zoo's
Qwen3-235B-A22B runs on 256 H100 at 4k tokens, with and without the exchange overlapped, and its
long-context table, forced and dropless routing at 16k to 128k tokens) is predicted at its own
plan, GPU, hosts, network and attention kernel (Megatron-Core's Transformer Engine runs cuDNN's
fused attention, torchtitan FlashAttention-2's kind); runs that forced balanced routing are
predicted with no load skew. A source is the page its figures come from (a repository, or one
issue or pull request thread: another team's runs). Prints the absolute percentage error of
tokens/s per GPU by source, by table, by framework and by GPU, and the forced ÷ dropless
throughput of each pair of runs that differ only in routing, predicted against published (how
well the load skew prices imbalance): first at the shipped ``LLMEfficiency``, then
leave-one-source-out: each source predicted with the grouped-GEMM efficiencies (Blackwell's on the
Blackwell rows, the others' on theirs) fitted on the other sources only. Run against an older tree
(its ``src`` on PYTHONPATH) to print that tree's errors on the same rows: the fit needs this
tree's model.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import re
import statistics
import tempfile
from pathlib import Path
from typing import Any

CSV = Path(__file__).with_name("published_llm_training_moe.csv")
# Qwen/Qwen3-235B-A22B config.json (architecture keys), not among the built-in configs.
EXTRA_CONFIGS = {
    "qwen3-235b-a22b": {
        "model_type": "qwen3_moe", "hidden_size": 4096, "num_hidden_layers": 94, "num_attention_heads": 64,
        "num_key_value_heads": 4, "head_dim": 128, "intermediate_size": 12288, "moe_intermediate_size": 1536,
        "num_experts": 128, "num_experts_per_tok": 8, "decoder_sparse_step": 1, "mlp_only_layers": [],
        "vocab_size": 151936, "max_position_embeddings": 40960, "tie_word_embeddings": False,
    },
    # torchtitan's DeepSeek-V3 "16B" flavor (torchtitan/models/deepseek_v3/__init__.py @82a9530f6),
    # written as the Hugging Face DeepSeek-V3 config it describes.
    "deepseek-v3-16b": {
        "model_type": "deepseek_v3", "hidden_size": 2048, "num_hidden_layers": 27, "num_attention_heads": 16,
        "num_key_value_heads": 16, "intermediate_size": 10944, "moe_intermediate_size": 1408,
        "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
        "moe_layer_freq": 1, "kv_lora_rank": 512, "q_lora_rank": None, "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 102400, "max_position_embeddings": 163840,
        "n_group": 1, "topk_group": 1, "topk_method": "greedy", "num_nextn_predict_layers": 0,
        "tie_word_embeddings": False,
    },
}  # fmt: skip
GRID = [round(0.25 + 0.05 * i, 2) for i in range(16)]  # grouped-GEMM efficiency candidates, 0.25 … 1.00


def load_rows(path: Path) -> list[dict[str, Any]]:
    from perdollar import catalog
    from perdollar.predict.llm import parse_plan
    from perdollar.workload.llm import load_llm_workload

    cat = catalog.load()
    rows = []
    folder = Path(tempfile.mkdtemp())
    for row in csv.DictReader(path.open()):
        spec = row["model"]
        if spec in EXTRA_CONFIGS:
            config = folder / f"{spec}.json"
            config.write_text(json.dumps(EXTRA_CONFIGS[spec]))
            spec = str(config)
        workload = load_llm_workload(spec, seq_len=int(row["seq_len"]), global_batch=int(row["global_batch"]))
        rows.append(
            {
                **row,
                "arch": workload.architecture,
                "accelerator": cat.accelerators[row["gpu"]],
                "plan": parse_plan(row["plan"]),
                "measured": float(row["tokens_per_second_per_gpu"]),
            }
        )
    return rows


def predict(row: dict[str, Any], efficiency: Any) -> float | None:
    from perdollar.errors import PerdollarError
    from perdollar.predict.llm import predict_llm_training

    gpus_per_node, nodes = int(row["gpus_per_node"]), int(row["nodes"])
    if row["balance"] == "forced" and hasattr(efficiency, "expert_load_skew"):
        efficiency = dataclasses.replace(efficiency, expert_load_skew=0.0)
    try:
        p = predict_llm_training(
            row["arch"], row["accelerator"], gpus_per_node=gpus_per_node, nodes=nodes, plan=row["plan"],
            seq_len=int(row["seq_len"]), global_batch=int(row["global_batch"]), efficiency=efficiency,
            network_gbps=float(row["network_gbps_per_node"]),
            attention_kernel=attention_kernel_of(row["plan"]),
        )  # fmt: skip
    except PerdollarError as refused:
        _say_once(f"  refused: {row['model']} {row['plan'].token()}: {refused}")
        return None
    if not p.fits:
        _say_once(
            f"  predicted not to fit (the source ran it): {row['model']} {row['plan'].token()}: "
            + p.fit_reason
        )
    return p.tokens_per_second / p.gpus


def attention_kernel_of(plan: Any) -> str:
    """Megatron-Core (alone or under NeMo) runs attention through Transformer Engine, cuDNN's fused
    kernels on Hopper; torchtitan runs PyTorch's SDPA or FlexAttention, FlashAttention-2's kind (as
    the dense training benchmark, ``llm_training_rows.attention_kernel_of``)."""
    return "native" if plan.resolved_framework.name in ("megatron", "nemo") else "flash2"


_SAID: set[str] = set()


def _say_once(message: str) -> None:
    if message not in _SAID:
        _SAID.add(message)
        print(message)


def errors(rows: list[dict[str, Any]], efficiency: Any) -> list[float]:
    out = []
    for row in rows:
        predicted = predict(row, efficiency)
        if predicted is not None:
            out.append(abs(predicted / row["measured"] - 1))
    return out


def line(label: str, errs: list[float]) -> str:
    if not errs:
        return f"{label:<70} no rows"
    median, worst = 100 * statistics.median(errs), 100 * max(errs)
    return f"{label:<70} n={len(errs):>2}  median {median:5.1f}%  max {worst:5.1f}%"


def fit(rows: list[dict[str, Any]], start: Any) -> Any:
    """The grid values of the grouped-GEMM efficiencies with the least median error on ``rows``:
    Blackwell's on its rows, the other generations' on theirs (each touches only its own); one
    without rows to fit stays at 1.0, not at the shipped value (which saw every source)."""
    neutral = {name: 1.0 for name in ("grouped_gemm_efficiency", "blackwell_grouped_gemm_efficiency")}
    start = dataclasses.replace(start, **{k: v for k, v in neutral.items() if hasattr(start, k)})
    fitted = start
    for name, blackwell in (("grouped_gemm_efficiency", False), ("blackwell_grouped_gemm_efficiency", True)):
        own = [r for r in rows if r["accelerator"].architecture.startswith("Blackwell") == blackwell]
        if not own or not hasattr(start, name):
            continue
        best = min(
            GRID, key=lambda g: statistics.median(errors(own, dataclasses.replace(start, **{name: g})))
        )
        fitted = dataclasses.replace(fitted, **{name: best})
    return fitted


def fitted_label(eff: Any) -> str:
    blackwell = getattr(eff, "blackwell_grouped_gemm_efficiency", "-")
    return f"g={eff.grouped_gemm_efficiency}, Blackwell {blackwell}"


def balance_pairs(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(forced, dropless) runs of one table at the same plan, length and batch."""

    def key(r: dict[str, Any]) -> tuple[str, str, str, str]:
        return r["table"], r["plan"].token(), r["seq_len"], r["global_batch"]

    dropless = {key(r): r for r in rows if r["balance"] == "dropless"}
    return [(r, dropless[key(r)]) for r in rows if r["balance"] == "forced" and key(r) in dropless]


def main() -> None:
    from perdollar.predict.llm import LLMEfficiency

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--csv", type=Path, default=CSV)
    args = parser.parse_args()
    rows = load_rows(args.csv)
    for row in rows:  # a source is its repository: one team's runs, whichever of its tables
        row["table"] = re.sub(r" @\S+", "", row["source"])  # its file and table, without the commit
        row["source"] = row["source"].split(" ")[0]
    sources = sorted({row["source"] for row in rows})
    shipped = LLMEfficiency()
    print("shipped efficiencies:")
    everything = []
    for source in sources:
        errs = errors([r for r in rows if r["source"] == source], shipped)
        everything += errs
        print(line(source[:70], errs))
    print(line("all MoE training rows", everything))
    print("\nby table (shipped efficiencies):")
    for table in sorted({row["table"] for row in rows}):
        print(line(table.split(" ", 1)[1][:70], errors([r for r in rows if r["table"] == table], shipped)))
    print_groups(rows, lambda r: errors([r], shipped), "shipped efficiencies")
    print("\nforced ÷ dropless throughput, predicted vs published:")
    for forced, dropless in balance_pairs(rows):
        predicted = [predict(r, shipped) for r in (forced, dropless)]
        if None in predicted:
            continue
        print(
            f"  {forced['plan'].token():<48} seq {forced['seq_len']:>6}  predicted "
            f"{predicted[0] / predicted[1]:.3f}  published {forced['measured'] / dropless['measured']:.3f}"
        )
    if not hasattr(shipped, "grouped_gemm_efficiency"):
        return
    print("\nleave-one-source-out (grouped-GEMM efficiencies fitted on the other sources):")
    held = []
    held_by_row: dict[int, list[float]] = {}
    for source in sources:
        fitted = fit([r for r in rows if r["source"] != source], shipped)
        own = [r for r in rows if r["source"] == source]
        errs = errors(own, fitted)
        held += errs
        held_by_row.update({id(r): errors([r], fitted) for r in own})
        print(line(f"{source[:40]} ({fitted_label(fitted)})", errs))
    print(line("all MoE training rows, held out", held))
    print_groups(rows, lambda r: held_by_row[id(r)], "held out")


def print_groups(rows: list[dict[str, Any]], row_errors: Any, label: str) -> None:
    """Errors by framework and by GPU (each a group of rows, never a row alone)."""
    groups = (("framework", lambda r: r["plan"].resolved_framework.name), ("GPU", lambda r: r["gpu"]))
    for title, key in groups:
        print(f"\nby {title} ({label}):")
        for value in sorted({key(r) for r in rows}):
            print(line(f"  {value}", [e for r in rows if key(r) == value for e in row_errors(r)]))


if __name__ == "__main__":
    main()
