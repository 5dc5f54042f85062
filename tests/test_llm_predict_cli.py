"""`perdollar predict` for language models through the real command line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cli_runner import run_perdollar

SMALL_LLAMA = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "intermediate_size": 1408,
    "vocab_size": 8000,
    "max_position_embeddings": 4096,
}


def one_line_error(done: subprocess.CompletedProcess[str], *expected: str) -> None:
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip() and "loss_type" not in line]
    assert len(lines) == 1 and lines[0].startswith("perdollar: error: "), done.stderr
    for text in expected:
        assert text in lines[0]


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(SMALL_LLAMA))
    return path


def test_contract_json(config: Path) -> None:
    done = run_perdollar(
        "predict", str(config), "--instance", "p4d.24xlarge", "--nodes", "2", "--seq-len", "1024",
        "--micro-batch", "2", "--global-batch", "64", "--plan", "fsdp", "--activation-checkpointing",
        "--precision", "amp-bf16", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    for key in ("tokens_per_second", "samples_per_second", "mfu", "plan", "memory_per_gpu_gib", "fits",
                "bottleneck", "basis", "band"):  # fmt: skip
        assert key in result
    plan = result["plan"]
    assert (
        plan["strategy"] == "fsdp" and plan["activation_checkpointing"] is True and plan["micro_batch"] == 2
    )
    assert plan["gradient_accumulation"] == 64 // (2 * 16)  # 2 hosts × 8 GPUs
    assert result["gpus"] == 16 and result["sample_unit"] == "tokens"
    assert result["tokens_per_second"] == pytest.approx(result["samples_per_second"] * 1024)
    assert result["band"]["low"] < result["tokens_per_second"] < result["band"]["high"]
    assert result["fits"] is True and 0 < result["mfu"] < 1
    assert "exposed weight all-gather" in result["breakdown_s"] or result["bottleneck"] != "communication"


def test_readable_output_names_the_searched_plan(config: Path) -> None:
    done = run_perdollar(
        "predict", str(config), "--instance", "g5.12xlarge", "--seq-len", "512", "--global-batch", "32"
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "plan: " in done.stdout and "tokens/s" in done.stdout and "MFU" in done.stdout
    assert "over 4 GPUs" in done.stdout and "memory per GPU" in done.stdout


def test_one_gpu_of_24_gb_cannot_hold_full_fine_tuning_of_8b_but_qlora_fits() -> None:
    full = run_perdollar(
        "predict", "llama-3.1-8b", "--instance", "g5.2xlarge", "--global-batch", "16", "--json"
    )
    assert full.returncode == 0, full.stderr[-2000:]
    result = json.loads(full.stdout)
    assert result["fits"] is False
    assert "has 21.6 GiB" in result["fit_reason"] and result["memory_per_gpu_gib"] > 16 * 8.03e9 / 2**30
    qlora = run_perdollar(
        "predict",
        "llama-3.1-8b",
        "--instance",
        "g5.2xlarge",
        "--global-batch",
        "16",
        "--finetune",
        "qlora",
        "--json",
    )
    assert qlora.returncode == 0, qlora.stderr[-2000:]
    result = json.loads(qlora.stdout)
    assert result["fits"] is True and result["plan"]["finetune"] == "qlora"


def test_a_plan_that_cannot_run_is_a_one_line_error(config: Path) -> None:
    done = run_perdollar(
        "predict", str(config), "--instance", "p4d.24xlarge", "--plan", "fsdp", "--tensor-parallel", "3"
    )
    one_line_error(done, "tensor parallel 3")


def test_llm_options_on_another_workload_are_refused() -> None:
    one_line_error(
        run_perdollar("predict", "mlp", "--instance", "g5.2xlarge", "--seq-len", "128"), "--seq-len"
    )


def test_a_missing_config_file_is_a_one_line_error() -> None:
    one_line_error(
        run_perdollar("predict", "llama-3.1-8b.json", "--instance", "g5.2xlarge"), "does not exist"
    )


def test_fp8_training_on_a_chip_without_fp8_is_a_one_line_error(config: Path) -> None:
    done = run_perdollar("predict", str(config), "--instance", "p4d.24xlarge", "--precision", "fp8", "--json")
    one_line_error(done, "p4d.24xlarge", "FP8")


def test_fp8_training_on_hopper_reports_fp8(config: Path) -> None:
    done = run_perdollar("predict", str(config), "--instance", "p5.48xlarge", "--precision", "fp8", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    document = json.loads(done.stdout)
    assert document["precision"] == "fp8" and document["tokens_per_second"] > 0


def _predicted(config: Path, *options: str) -> dict[str, Any]:
    """``predict CONFIG --json`` with these options, parsed; a failure shows its stderr."""
    done = run_perdollar("predict", str(config), *options, "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_rowwise_fp8_through_the_command_line(config: Path) -> None:
    """``--precision fp8-rowwise`` prices torchao's row-wise recipe: FP8 GEMMs with its transposed
    casts, so slower than per-tensor fp8 on the same plan; chips without FP8 refuse it in one line."""
    results = {
        precision: _predicted(config, "--instance", "p5.48xlarge", "--seq-len", "1024", "--micro-batch", "4",
                              "--global-batch", "32", "--plan", "fsdp,tp4", "--precision", precision)
        for precision in ("fp8", "fp8-rowwise")
    }  # fmt: skip
    assert results["fp8-rowwise"]["precision"] == "fp8-rowwise"
    assert results["fp8-rowwise"]["tokens_per_second"] < results["fp8"]["tokens_per_second"]
    refused = run_perdollar(
        "predict", str(config), "--instance", "p4d.24xlarge", "--precision", "fp8-rowwise"
    )
    one_line_error(refused, "p4d.24xlarge", "FP8")


def test_blocking_gradient_reduction_through_the_command_line(config: Path) -> None:
    """``ddp+blocking`` waits for the gradients' all-reduce across two hosts after the backward:
    slower than DDP's overlapped buckets, and its JSON says so; FSDP refuses it in one line."""
    results = {
        plan: _predicted(config, "--instance", "p4d.24xlarge", "--nodes", "2", "--seq-len", "1024",
                         "--global-batch", "64", "--plan", plan)
        for plan in ("ddp,mb4", "ddp+blocking,mb4")
    }  # fmt: skip
    blocking, overlapped = results["ddp+blocking,mb4"], results["ddp,mb4"]
    assert blocking["plan"]["data_parallel_comm"] == "blocking"
    assert overlapped["plan"]["data_parallel_comm"] == "overlapped"
    assert blocking["tokens_per_second"] < overlapped["tokens_per_second"]
    one_line_error(
        run_perdollar("predict", str(config), "--instance", "p4d.24xlarge", "--plan", "fsdp+blocking"),
        "+blocking",
        "ddp, zero1 or zero2",
    )


def test_blocking_tensor_parallelism_through_the_command_line(config: Path) -> None:
    """``tp4-blocking`` prices the tensor-parallel all-reduces with nothing hidden: slower than the
    overlapped plan of the same shape, and the plan's JSON and token say which it was."""
    results = {
        plan: _predicted(config, "--instance", "p4d.24xlarge", "--seq-len", "1024", "--micro-batch", "4",
                         "--global-batch", "32", "--plan", plan)
        for plan in ("fsdp,tp4", "fsdp,tp4-blocking")
    }  # fmt: skip
    blocking, overlapped = results["fsdp,tp4-blocking"], results["fsdp,tp4"]
    assert blocking["plan"]["tensor_parallel_comm"] == "blocking"
    assert overlapped["plan"]["tensor_parallel_comm"] == "overlapped"
    assert blocking["plan"]["token"].startswith("fsdp,tp4-blocking")
    assert blocking["tokens_per_second"] < overlapped["tokens_per_second"]
    one_line_error(
        run_perdollar("predict", str(config), "--instance", "p4d.24xlarge", "--plan", "fsdp,pp2-blocking"),
        "pp2-blocking",
        "tpN[-blocking]",
    )
