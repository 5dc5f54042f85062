"""benchmarks/published_llm_training.csv: sourced rows whose plans add up and whose configs match.

The parameter counts a source states (LLM Foundry's NumParams column, the Megatron-LM table's
"Number of parameters") are checked against the architecture the harness builds for the row, so
a config that does not describe the published model fails here, not as a prediction error.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from perdollar.catalog import load as load_catalog
from perdollar.workload.llm import DecoderArchitecture, from_hf_config, load_config_file

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "benchmarks" / "published_llm_training.csv"
CONFIGS = ROOT / "src" / "perdollar" / "workload" / "llm" / "configs"
DEV_COLUMNS = [
    "source",
    "model",
    "task",
    "gpu",
    "gpu_count",
    "precision",
    "batch_size",
    "batch_scope",
    "seq_len",
    "throughput",
    "unit",
    "metric",
    "throughput_scope",
    "framework",
    "system",
    "flag",
    "notes",
    "file",
]


def _rows() -> list[dict[str, str]]:
    with CSV.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _architecture(config: str) -> DecoderArchitecture:
    if ":" not in config:
        return from_hf_config(load_config_file(CONFIGS / f"{config}.json"))
    model_type, _, pairs = config.partition(":")
    document: dict[str, object] = {"model_type": model_type}
    for pair in pairs.split(","):
        key, _, value = pair.partition("=")
        document[key] = {"true": True, "false": False}.get(value, int(value) if value.isdigit() else value)
    return from_hf_config(document)


def test_the_published_schema_comes_first_and_every_row_names_its_source() -> None:
    with CSV.open(encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    assert header[: len(DEV_COLUMNS)] == DEV_COLUMNS
    rows = _rows()
    assert len(rows) >= 60
    for row in rows:
        assert re.search(r"@[0-9a-f]{40}\b", row["source"]), row["source"]
        assert row["unit"] == "tokens/s" and row["task"] == "train"
        assert float(row["throughput"]) > 0


def test_plans_add_up_to_the_gpus_and_the_global_batch() -> None:
    for row in _rows():
        parallel = [int(row[k] or 1) for k in ("tensor_parallel", "pipeline_parallel", "context_parallel")]
        data_parallel = int(row["data_parallel"])
        assert parallel[0] * parallel[1] * parallel[2] * data_parallel == int(row["gpu_count"]), row["model"]
        assert int(row["nodes"]) * int(row["gpus_per_node"]) == int(row["gpu_count"])
        # Only full checkpointing recomputes the whole forward; selective runs count as without.
        assert (row["activation_checkpointing"] == "1") == (row["activation_checkpointing_kind"] == "full")
        if row["micro_batch"] and row["gradient_accumulation"]:
            product = int(row["micro_batch"]) * int(row["gradient_accumulation"]) * data_parallel
            assert product == int(row["global_batch"]), row["model"]


def test_the_never_fitted_collections_are_held_out_whole() -> None:
    marks: dict[str, set[str]] = {}
    for row in _rows():
        marks.setdefault(row["collection"], set()).add(row["holdout"])
    assert sorted(name for name, seen in marks.items() if seen == {"1"}) == ["torchao-float8", "torchtitan"]
    assert all(seen in ({"0"}, {"1"}) for seen in marks.values())


def test_every_gpu_is_in_the_catalog() -> None:
    catalog = load_catalog()
    for gpu in {row["gpu"] for row in _rows()}:
        assert catalog.accelerator(gpu).peak_bf16_tflops or catalog.accelerator(gpu).peak_fp16_tflops


def test_configs_have_the_parameter_counts_their_sources_state() -> None:
    checked = 0
    for row in _rows():
        architecture = _architecture(row["config"])
        # The sources count a learned position table of the run's sequence length.
        positions = int(row["seq_len"]) * architecture.hidden_size
        without_positions = architecture.total_params - getattr(architecture, "position_embedding_params", 0)
        stated = re.search(r"NumParams (\d+)", row["notes"])
        if stated:  # LLM Foundry counts learned position embeddings: one row of d_model per position
            assert without_positions + positions == pytest.approx(int(stated.group(1)), rel=2e-3), row[
                "model"
            ]
            checked += 1
        stated = re.search(r"published parameters ([\d.]+)B", row["notes"])
        if stated:  # GPT-2 style, learned positions too; the table rounds to 0.1B (biases: within 0.1%)
            total = without_positions + positions
            billions = float(stated.group(1))
            assert total / 1e9 == pytest.approx(billions, abs=max(0.05, 1e-3 * billions)), row["model"]
            checked += 1
    assert checked >= 200


def test_derived_tokens_per_second_follow_the_stated_flop_counts() -> None:
    rows = {row["model"]: row for row in _rows()}
    # Megatron-LM 2021, GPT 1.7B: 137 TFLOP/s per GPU on 32 GPUs, h=2304, l=24, s=2048, V=51200,
    # 96·l·h²·(1 + s/6h + V/16lh) FLOPs per token = 1.47503e10.
    assert float(rows["GPT 1.7B (Megatron-LM weak scaling)"]["throughput"]) == pytest.approx(
        137e12 * 32 / 1.47503e10, rel=1e-3
    )
    # Megatron-Core H100, GPT 1.7B: 408.8 TFLOP/s per GPU on 48 GPUs, h=2048, l=24, s=4096,
    # V=131072, 72·l·h²·(1 + s/6h + V/12lh) FLOPs per token = 1.12743e10.
    assert float(rows["GPT 1.7B (Megatron-Core weak scaling)"]["throughput"]) == pytest.approx(
        408.8e12 * 48 / 1.12743e10, rel=1e-3
    )


REPEATS = ROOT / "benchmarks" / "published_llm_training_repeats.csv"


def test_each_earlier_publication_pairs_with_one_later_measurement_of_its_configuration() -> None:
    with REPEATS.open(encoding="utf-8", newline="") as handle:
        earlier = list(csv.DictReader(handle))
    with CSV.open(encoding="utf-8", newline="") as handle:
        assert next(csv.reader(handle)) == list(earlier[0])  # one schema for both files
    columns = ("collection", "config", "gpu", "gpu_count", "seq_len", "micro_batch", "gradient_accumulation")
    later = {tuple(row[c] for c in columns): row for row in _rows()}
    assert len(earlier) >= 40
    for row in earlier:
        assert re.search(r"@[0-9a-f]{40}\b", row["source"]), row["source"]
        match = later[tuple(row[c] for c in columns)]
        assert match["source"] != row["source"]  # a different publication ...
        assert match["throughput"] != row["throughput"]  # ... that measured again
    assert len({tuple(row[c] for c in columns) for row in earlier}) == len(earlier)
