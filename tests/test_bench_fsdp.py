"""`perdollar bench --nproc 2 --plan …`: a tiny Llama trained under FSDP by two gloo processes.

The command line runs in this process (the two workers it starts are processes of their own); the
workload is a two-layer Llama of hidden size 64 written to a file, as a user would write one.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.measure.fsdp import BenchPlan, collective_dtype, parse_bench_plan
from perdollar.measure.serialize import measurement_from_dict
from perdollar.measure.text import lines

SEQ_LEN = 32

TINY_LLAMA = f"""
from functools import partial

from perdollar.workload.references import inputs
from perdollar.workload.spec import Workload


def model():
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         intermediate_size=128, vocab_size=256, max_position_embeddings=64)
    return LlamaForCausalLM(config)


def tiny():
    return Workload(name="tiny-llama", model_factory=model,
                    input_factory=partial(inputs.causal_lm, seq_len={SEQ_LEN}, vocab=256),
                    batch_size=1, precision="fp32", sample_unit="sequences",
                    config={{"seq_len": {SEQ_LEN}, "tokens_per_sample": {SEQ_LEN}}})
"""


QUIET = {"PERDOLLAR_METADATA_URL": "off", "OMP_NUM_THREADS": "1"}


@pytest.mark.slow  # two gloo processes and a one-process baseline: 25–33 s on two busy cores
def test_two_gloo_processes_measure_an_fsdp_plan_and_record_it(tmp_path: Path) -> None:
    (tmp_path / "tiny.py").write_text(TINY_LLAMA, encoding="utf-8")
    store = tmp_path / "results.db"
    completed = run_perdollar(
        "bench",
        "tiny.py:tiny",
        "--nproc",
        "2",
        "--plan",
        "fsdp+ac,mb2",
        "--device",
        "cpu",
        "--duration",
        "3",
        "--json",
        "--store",
        f"sqlite:///{store}",
        cwd=tmp_path,
        env=QUIET,
        timeout=400,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    document = json.loads(completed.stdout)
    assert document["status"] == "ok", document["message"]
    assert document["nproc"] == 2
    assert document["batch_size"] == 2  # mb2: two sequences per process
    extra = document["extra"]
    assert extra["backend"] == "gloo"
    assert extra["plan"] == "fsdp+ac,mb2"
    assert extra["sharding"] == "FULL_SHARD"
    assert extra["activation_checkpointing"] is True
    assert extra["data_parallel"] == 2
    assert extra["collective_dtype"] == "as stored"  # gloo on the CPU keeps the fp32 parameters
    samples_per_second = document["samples_per_second"]["median"]
    assert samples_per_second > 0
    assert extra["tokens_per_second"] == pytest.approx(samples_per_second * SEQ_LEN)
    text = "\n".join(lines(measurement_from_dict(document)))
    assert "plan fsdp+ac,mb2" in text and "tokens/s" in text
    # Stored as measured: the plan travels with the row in the real SQLite file.
    with sqlite3.connect(store) as connection:
        tables = [row[0] for row in connection.execute("select name from sqlite_master where type='table'")]
        stored = [
            text
            for table in tables
            for row in connection.execute(f"select * from {table}")
            for text in row
            if isinstance(text, str) and "fsdp+ac,mb2" in text
        ]
    assert stored, "the stored measurement keeps its plan"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--plan", "tp8"], "unknown --plan strategy"),
        (["--plan", "zero1"], "cannot be measured by bench"),
        (["--plan", "fsdp,pp2"], "data parallelism only"),
        (["--plan", "fsdp,mb2", "--batch-size", "4"], "per-process batch once"),
        (["--plan", "fsdp", "--inference"], "shards the training"),
    ],
)
def test_plans_bench_cannot_run_are_one_line_errors(tmp_path: Path, args: list[str], fragment: str) -> None:
    completed = run_perdollar(
        "bench", "mlp", "--nproc", "2", *args, "--no-store", cwd=tmp_path, env=QUIET, timeout=120
    )
    assert completed.returncode == 2
    assert fragment in completed.stderr
    assert "Traceback" not in completed.stderr


def test_plan_tokens_read_as_the_planner_writes_them() -> None:
    assert parse_bench_plan("fsdp+ac,mb4,ga1") == BenchPlan(
        "fsdp", activation_checkpointing=True, micro_batch=4
    )
    assert parse_bench_plan("ZeRO2") == BenchPlan("zero2")
    assert parse_bench_plan("ddp,tp1,pp1").sharding == "NO_SHARD"
    assert parse_bench_plan("zero2+ac,mb3").token() == "zero2+ac,mb3"
    for bad in ("", "fsdp+offload", "fsdp,mb0", "fsdp,ga4", "fsdp,mbx"):
        with pytest.raises(PerdollarError):
            parse_bench_plan(bad)


@pytest.mark.parametrize(
    ("precision", "device", "expected"),
    [("amp-bf16", "cuda:0", "bfloat16"), ("amp-fp16", "cuda:1", "float16"), ("amp-bf16", "cpu", None),
     ("fp32", "cuda:0", None), ("bf16", "cuda:0", None)],
)  # fmt: skip
def test_gpu_runs_gather_and_reduce_in_the_16_bit_type_of_mixed_precision(
    precision: str, device: str, expected: str | None
) -> None:
    assert collective_dtype(precision, device) == expected
