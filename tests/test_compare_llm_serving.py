"""`perdollar compare LLM --inference --engine …` through the real command line."""

from __future__ import annotations

import json

from cli_runner import run_perdollar
from perdollar.predict.llm_serving.engines import ENGINES

SERVED = ("--inference", "--rps", "5", "--input-tokens", "1000", "--output-tokens", "200", "--no-store")
CANDIDATES = ("1x g6e.xlarge on-demand", "g5.xlarge spot")


def _compared(*args: str) -> dict:
    done = run_perdollar("compare", "llama-3.1-8b", *CANDIDATES, *SERVED, *args, "--json", columns=200)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_one_engine_prices_each_candidate_as_recommend_does() -> None:
    compared = _compared("--engine", "sglang")
    rows = compared["candidates"]
    assert [(r["configuration"], r["engine"]) for r in rows] == [(c, "sglang") for c in CANDIDATES]
    done = run_perdollar("recommend", "llama-3.1-8b", *SERVED, "--engine", "sglang", "--market", "spot",
                         "--top", "300", "--json", columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr
    ranked = [d for d in json.loads(done.stdout)["deployments"] if d["instance_type"] == "g5.xlarge"]
    spot = rows[1]
    # The best g5.xlarge spot deployment recommend ranks is the one compare shows for it.
    assert spot["deployment"] == ranked[0]["label"]
    assert spot["usd_per_million_output_tokens"] == ranked[0]["usd_per_million_output_tokens"]
    assert spot["tpot_p99_ms"] == ranked[0]["tpot_p99_ms"]
    cheapest = min(r["usd_per_million_output_tokens"] for r in rows)
    for row in rows:
        assert row["times_cheapest"] == row["usd_per_million_output_tokens"] / cheapest


def test_a_list_of_engines_shows_each_candidate_under_each_engine() -> None:
    rows = _compared("--engine", "hf,vllm")["candidates"]
    assert [(r["configuration"], r["engine"]) for r in rows] == [
        (c, e) for c in CANDIDATES for e in ("hf", "vllm")
    ]
    by_pair = {(r["configuration"], r["engine"]): r for r in rows}
    for candidate in CANDIDATES:
        # Each engine's own prediction: transformers' generate() decodes slower than vLLM.
        assert by_pair[(candidate, "hf")]["tpot_p99_ms"] > by_pair[(candidate, "vllm")]["tpot_p99_ms"]


def test_any_engine_shows_every_engine_side_by_side_in_the_table() -> None:
    compared = _compared("--engine", "any")
    assert tuple(compared["engines"]) == tuple(ENGINES)
    assert len(compared["candidates"]) == len(CANDIDATES) * len(ENGINES)
    done = run_perdollar("compare", "llama-3.1-8b", *CANDIDATES, *SERVED, "--engine", "any", columns=200)
    assert done.returncode == 0, done.stderr
    table_rows = [line for line in done.stdout.splitlines() if line.startswith("│ g5.xlarge spot")]
    assert [line.split("│")[2].strip() for line in table_rows] == list(ENGINES)


def test_a_plan_in_a_label_fixes_the_degree_and_format() -> None:
    done = run_perdollar("compare", "llama-3.1-8b", "1x g6e.xlarge with int4", "g5.xlarge spot with tp1+fp16",
                         *SERVED, "--json", columns=200)  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["candidates"]
    assert [(r["tensor_parallel"], r["precision"], r["engine"]) for r in rows] == [
        (1, "int4", "vllm"), (1, "fp16", "vllm"),
    ]  # fmt: skip


def test_bad_engines_and_non_language_models_are_one_line_errors() -> None:
    for args, says in (
        (("llama-3.1-8b", *CANDIDATES, *SERVED, "--engine", "vllm,nope"), "unknown serving engine 'nope'"),
        (("llama-3.1-8b", *CANDIDATES, *SERVED, "--engine", "any,vllm"), "mixes any with named engines"),
        (("resnet50", *CANDIDATES, *SERVED), "compares a language model's serving"),
        (("llama-3.1-8b", *CANDIDATES, "--rps", "5"), "add --inference"),
    ):
        done = run_perdollar("compare", *args, columns=200)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert len(lines) == 1 and says in lines[0], done.stderr
