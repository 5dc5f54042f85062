"""A language model's shape limits how it can be split: what no engine runs is refused or skipped.

Tensor parallelism splits attention by whole heads (vLLM and Megatron-LM assert it), so a degree
that does not divide the heads is no plan; serving copies KV heads when there are more ranks
than KV heads (vLLM), training does not (Megatron-Core). Pipeline stages cannot outnumber the
layers, a request cannot outrun the model's context, and a global batch splits evenly over the
data-parallel ranks. A user who fixes such a value gets one line and exit 2; the planner skips
such plans with their reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar import catalog as catalog_mod
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.planner import plan_shapes, search_plans
from perdollar.predict.llm.step import plan_problem
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.predict.parallel_limits import tensor_parallel_problem
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import from_hf_config, load_config_file

CONFIGS = Path(__file__).resolve().parents[1] / "src" / "perdollar" / "workload" / "llm" / "configs"


def _arch(model: str):
    return from_hf_config(load_config_file(CONFIGS / f"{model}.json"), name=model)


REFUSED = [
    pytest.param(
        "predict gpt-125m --instance p4d.24xlarge --plan ddp --tensor-parallel 8",
        ("tensor parallel 8", "12 attention heads", "1, 2, 3, 4, 6 or 12"),
        id="training-fixed-tp",
    ),
    pytest.param(
        "predict gpt-125m --instance p4d.24xlarge --tensor-parallel 8",
        ("tensor parallel 8", "12 attention heads"),
        id="training-searched-tp",
    ),
    pytest.param(
        "predict gpt-125m --inference --accelerator A100 --gpus 8 --tensor-parallel 8"
        " --input-tokens 100 --output-tokens 100",
        ("tensor parallel 8", "12 attention heads"),
        id="serving-tp",
    ),
    pytest.param(
        "predict gpt-125m --inference --accelerator A100 --gpus 64 --tensor-parallel 1"
        " --pipeline-parallel 64 --input-tokens 100 --output-tokens 100",
        ("pipeline parallel 64", "12 layers"),
        id="serving-pp",
    ),
    pytest.param(
        "predict llama-3.1-8b --inference --accelerator H100 --input-tokens 200000 --output-tokens 100",
        ("200,100", "131,072-token context"),
        id="serving-context",
    ),
    pytest.param(
        "recommend llama-3.1-8b --inference --rps 1 --input-tokens 200000 --output-tokens 100 --no-store",
        ("200,100", "131,072-token context"),
        id="recommend-serving-context",
    ),
    pytest.param(
        "predict gpt-125m --instance p4d.24xlarge --nodes 16 --pipeline-parallel 16",
        ("pipeline parallel 16", "12 layers"),
        id="training-searched-pp",
    ),
    pytest.param(
        # Two hosts: every plan keeps at least 2 data-parallel ranks (tensor parallel 8 splits no 12 heads).
        "predict gpt-125m --instance p4d.24xlarge --nodes 2 --global-batch 7",
        ("global batch 7", "16 data-parallel ranks", "nearest that divide evenly: 16"),
        id="training-searched-global-batch",
    ),
    pytest.param(
        "predict gpt-125m --instance p4d.24xlarge --plan ddp --global-batch 12",
        ("global batch 12", "not a multiple of 8", "8 or 16"),
        id="training-fixed-global-batch",
    ),
]


@pytest.mark.parametrize(("args", "phrases"), REFUSED)
def test_a_limit_the_model_cannot_meet_is_one_line_and_exit_2(args: str, phrases: tuple[str, ...]) -> None:
    completed = run_perdollar(*args.split())
    assert completed.returncode == 2, (completed.stdout[-1500:], completed.stderr[-1500:])
    message = completed.stderr.strip()
    assert message.count("\n") == 0 and "Traceback" not in message, message
    for phrase in phrases:
        assert phrase in message, (phrase, message)
    assert "throughput" not in completed.stdout


@pytest.mark.parametrize(("model", "global_batch"), [("gpt-125m", 12), ("llama-3.1-8b", 7)])
def test_the_global_batch_shown_is_the_one_asked_for(model: str, global_batch: int) -> None:
    completed = run_perdollar(
        "predict", model, "--instance", "p4d.24xlarge", "--global-batch", str(global_batch), "--json"
    )
    assert completed.returncode == 0, completed.stderr[-1500:]
    document = json.loads(completed.stdout)
    plan = document["plan"]
    assert document["global_batch"] == global_batch
    ranks = document["gpus"] // (plan["tensor_parallel"] * plan["pipeline_parallel"])
    assert ranks * plan["micro_batch"] * plan["gradient_accumulation"] == global_batch


def test_serving_with_more_ranks_than_kv_heads_copies_them_and_says_so() -> None:
    completed = run_perdollar(
        "predict", "llama-3.1-8b", "--inference", "--accelerator", "H100", "--gpus", "16",
        "--tensor-parallel", "16", "--input-tokens", "1000", "--output-tokens", "100",
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr[-1500:]
    assert "8 KV heads" in completed.stdout and "copied onto 2 ranks" in completed.stdout


def test_the_rules_follow_the_engines() -> None:
    qwen = _arch("qwen2.5-7b")  # 28 attention heads, 4 KV heads
    llama = _arch("llama-3.1-8b")  # 32 attention heads, 8 KV heads
    assert "28 attention heads" in tensor_parallel_problem(qwen, 8, serving=True)
    assert tensor_parallel_problem(qwen, 4, serving=False) == ""
    # More ranks than KV heads: vLLM copies them (16 = 2 × 8), Megatron-Core's training does not.
    assert tensor_parallel_problem(llama, 16, serving=True) == ""
    assert "8 KV heads" in tensor_parallel_problem(llama, 16, serving=False)
    assert tensor_parallel_problem(_arch("gpt-125m"), 1, serving=False) == ""


def test_the_planner_never_proposes_a_split_the_heads_or_the_batch_forbid() -> None:
    cat = catalog_mod.load()
    h100 = cat.accelerators["H100-SXM5-80GB"]
    arch = load_llm_workload("gpt-125m").architecture  # 12 heads
    shapes = plan_shapes(arch, 8, 1, finetune="full", lora_rank=16)
    problems = [plan_problem(s, arch, 8, 1, 256) for s in shapes]
    assert {s.tensor_parallel for s, p in zip(shapes, problems, strict=True) if not p} == {1, 2, 4}
    eight = [p for s, p in zip(shapes, problems, strict=True) if s.tensor_parallel == 8]
    assert eight and all("12 attention heads" in p for p in eight)
    found = search_plans(arch, h100, gpus_per_node=8, nodes=1, seq_len=512, global_batch=24)
    assert found.best is not None
    plan = found.best.plan
    ranks = 8 // plan.tensor_parallel
    assert 12 % plan.tensor_parallel == 0
    assert ranks * plan.micro_batch * plan.gradient_accumulation == 24 == found.best.global_batch
    # One data-parallel rank splits a batch of 7: tensor parallel 8 (its heads forbid it) or a
    # pipeline inside the host beside tensor parallel 4 or 2.
    one = search_plans(arch, h100, gpus_per_node=8, nodes=1, seq_len=512, global_batch=7)
    assert one.best is not None and one.best.plan.data_parallel_size(8) == 1
    assert one.best.plan.pipeline_inside_host(1) and 12 % one.best.plan.tensor_parallel == 0
    # Over two hosts every plan keeps 2 data-parallel ranks at least.
    none = search_plans(arch, h100, gpus_per_node=8, nodes=2, seq_len=512, global_batch=7)
    assert none.best is None and none.nearest_miss is None
    assert "global batch 7" in none.problem and "nearest that divide evenly: 16" in none.problem


def test_a_serving_search_excludes_degrees_the_heads_forbid_with_the_reason() -> None:
    frame = llm_serving_frame(
        _arch("gpt-125m"), catalog_mod.load(), input_tokens=500, output_tokens=100, rps=5,
        precisions=("fp16",), tensor_parallel_options=(4, 8),
    )  # fmt: skip
    frame = frame[frame.accelerator_key.str.startswith(("A100", "H100"))]
    eight, four = frame[frame.tensor_parallel == 8], frame[frame.tensor_parallel == 4]
    assert len(eight) and not eight.feasible.any()
    assert eight.excluded_reason.str.contains("12 attention heads").all()
    assert four.feasible.any() and not four.excluded_reason.str.contains("attention heads").any()


def test_a_fixed_training_plan_over_the_layers_is_refused_with_the_reason() -> None:
    arch = load_llm_workload("gpt-125m").architecture
    plan = TrainingPlan("ddp", pipeline_parallel=16)
    assert "exceeds the model's 12 layers" in plan_problem(plan, arch, 8, 16, 256)
