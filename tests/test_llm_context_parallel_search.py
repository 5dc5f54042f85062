"""The planner splits long sequences over context-parallel ranks where that wins, and only there."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.predict.llm import context_search
from perdollar.predict.llm.frame import cluster_settings
from perdollar.predict.llm.planner import PlanSearch, plan_shapes, search_plans
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.predict.llm.step import plan_memory
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.workload import LLMWorkload


def _question(
    model: str, seq_len: int, global_batch: int, nodes: int
) -> tuple[LLMWorkload, Any, dict[str, Any]]:
    cat = catalog.load()
    instance = cat.instance("p5.48xlarge")
    workload = load_llm_workload(model, seq_len=seq_len, global_batch=global_batch)
    accelerator = cat.accelerators[instance.accelerator_key]
    common = cluster_settings(workload, instance, int(instance.accelerator_count), nodes, None)
    return workload, accelerator, common


def _search(workload: LLMWorkload, accelerator: Any, common: dict[str, Any]) -> PlanSearch:
    return search_plans(workload.architecture, accelerator, **common)


def test_a_long_sequence_on_many_hosts_is_split_over_context_parallel_ranks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workload, h100, common = _question("llama-3.1-70b", 131_072, 32, nodes=8)
    found = _search(workload, h100, common)
    assert found.best is not None
    chosen = found.best.plan
    assert chosen.context_parallel > 1
    assert workload.seq_len % (2 * chosen.context_parallel) == 0
    memory, _, _ = plan_memory(
        workload.architecture,
        h100,
        chosen,
        precision=workload.precision,
        gpus_per_node=8,
        nodes=8,
        seq_len=workload.seq_len,
        global_batch=workload.global_batch,
        efficiency=LLMEfficiency(),
        attention_kernel=workload.attention_kernel,
    )
    assert memory.fits and memory.total <= memory.capacity
    assert found.best.fits

    monkeypatch.setattr(context_search, "CONTEXT_PARALLEL_MIN_SEQ_LEN", sys.maxsize)  # no context parallel
    without = _search(workload, h100, common)
    best_without = without.best or without.nearest_miss
    assert best_without is not None and best_without.plan.context_parallel == 1
    assert not best_without.fits or best_without.tokens_per_second < found.best.tokens_per_second


def test_short_sequences_search_exactly_the_plans_they_did(monkeypatch: pytest.MonkeyPatch) -> None:
    workload, h100, common = _question("llama-3.1-8b", 4096, 256, nodes=2)
    arch = workload.architecture
    shapes = plan_shapes(arch, 8, 2, finetune="full", lora_rank=16, seq_len=4096, global_batch=256)
    assert all(s.context_parallel == 1 for s in shapes)
    found = _search(workload, h100, common)

    monkeypatch.setattr(context_search, "CONTEXT_PARALLEL_MIN_SEQ_LEN", sys.maxsize)
    assert plan_shapes(arch, 8, 2, finetune="full", lora_rank=16, seq_len=4096, global_batch=256) == shapes
    without = _search(workload, h100, common)
    assert found.evaluated == without.evaluated
    assert found.best == without.best


def test_context_parallel_shapes_divide_the_gpus_the_batch_and_the_sequence() -> None:
    arch = load_llm_workload("llama-3.1-8b").architecture
    seq_len = 24_600  # splits into 2 × 2 and 2 × 4 equal chunks, not 2 × 8
    shapes = plan_shapes(arch, 8, 1, finetune="full", lora_rank=16, seq_len=seq_len, global_batch=24)
    split = [s for s in shapes if s.context_parallel > 1]
    assert {s.context_parallel for s in split} == {2, 4}
    for shape in split:
        ranks = shape.tensor_parallel * shape.pipeline_parallel * shape.context_parallel
        assert 8 % ranks == 0 and 24 % (8 // ranks) == 0
    in_host = [s.tensor_parallel * s.context_parallel <= 8 for s in split]
    assert in_host == sorted(in_host, reverse=True)  # rings inside a host come first


def _predict_json(*extra: str) -> dict[str, Any]:
    done = run_perdollar(
        "predict", "llama-3.1-70b", "--instance", "p5.48xlarge", "--nodes", "8", "--seq-len", "131072",
        "--global-batch", "32", *extra, "--json", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_predict_on_the_command_line_shows_the_context_parallel_plan() -> None:
    result = _predict_json()
    plan = result["plan"]
    assert result["seq_len"] == 131_072 and result["fits"] is True
    assert plan["context_parallel"] > 1 and f"cp{plan['context_parallel']}" in plan["token"]
    assert f"context parallel {plan['context_parallel']}" in result["plan_text"]
    # --context-parallel 1 keeps the search to unsplit sequences, and it finds a slower plan
    unsplit = _predict_json("--context-parallel", "1")
    assert unsplit["plan"]["context_parallel"] == 1
    assert unsplit["tokens_per_second"] < result["tokens_per_second"]
