"""An engine's build is part of the engine: ``--engine vllm@2024`` predicts at that build's held-out
speed, ``--engine vllm`` is today's build and says so, and a build no dated row ran is refused."""

from __future__ import annotations

import json

import pytest

from cli_runner import run_perdollar
from perdollar.predict.llm_serving.bands import BuildSpeed, engine_builds
from perdollar.predict.llm_serving.engines import ENGINES

PREDICT = ("predict", "llama-3.1-8b", "--inference", "--accelerator", "H100", "--gpus", "1",
           "--input-tokens", "1000", "--output-tokens", "300", "--json")  # fmt: skip
RECOMMEND = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000",
             "--output-tokens", "300", "--ttft-p99-ms", "1000", "--tpot-p99-ms", "50", "--no-store",
             "--json")  # fmt: skip


def _answer(*args: str) -> dict:
    completed = run_perdollar(*args)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return json.loads(completed.stdout)


def _build(year: str) -> BuildSpeed:
    return next(b for b in engine_builds("vllm") if b.year == year)


@pytest.mark.parametrize("asked", ["vllm@2024", "vllm@0.6", "vllm@0.6.3"])
def test_an_older_build_scales_the_prediction_by_its_held_out_speed(asked: str) -> None:
    today = _answer(*PREDICT, "--engine", "vllm")
    older = _answer(*PREDICT, "--engine", asked)
    speed = _build("2024").speed
    assert speed < 1  # the 2024 builds ran slower than the record predicts
    assert older["output_tokens_per_second"] == pytest.approx(
        today["output_tokens_per_second"] * speed, rel=1e-9
    )
    assert older["tpot_ms"] == pytest.approx(today["tpot_ms"] / speed, rel=1e-9)
    assert older["ttft_ms"] == pytest.approx(today["ttft_ms"] / speed, rel=1e-9)
    assert older["engine_build"] == "vllm 2024 builds" and older["engine_build_speed"] == speed
    assert today["engine_build"] == f"vllm {ENGINES['vllm'].version}" and today["engine_build_speed"] == 1.0


def test_a_build_is_found_by_a_version_its_rows_ran_and_the_text_says_its_factor() -> None:
    build = _build("2025")
    version = build.versions[0].rsplit(".", 1)[0]  # "0.7.3.dev138" → "0.7.3"
    completed = run_perdollar(*PREDICT[:-1], "--engine", f"vllm@{version}")
    assert completed.returncode == 0, completed.stderr[-2000:]
    said = f"vllm 2025 builds: ×{build.speed:.2f} of today's, from {build.rows} held-out rows"
    assert said in completed.stdout


def test_an_older_build_at_a_stated_load_is_slower_at_every_quantile() -> None:
    today = _answer(*PREDICT, "--engine", "vllm", "--concurrency", "8")
    older = _answer(*PREDICT, "--engine", "vllm@2024", "--concurrency", "8")
    assert older["output_tokens_per_second"] < today["output_tokens_per_second"]
    assert older["tpot_p99_ms"] > today["tpot_p99_ms"] and older["ttft_p99_ms"] > today["ttft_p99_ms"]
    assert older["engine_build"] == "vllm 2024 builds"


def test_recommend_sizes_an_older_build_with_more_replicas_and_names_it() -> None:
    today = _answer(*RECOMMEND, "--engine", "vllm")
    older = _answer(*RECOMMEND, "--engine", "vllm@2024")
    build = _build("2024")
    best_today, best_older = today["deployments"][0], older["deployments"][0]
    assert best_today["engine_build"] == f"vllm {ENGINES['vllm'].version}"
    assert best_older["engine_build"] == "vllm 2024 builds"
    assert best_older["usd_per_million_output_tokens"] > best_today["usd_per_million_output_tokens"]
    said = f"vllm 2024 builds: ×{build.speed:.2f} of today's, from {build.rows} held-out rows"
    assert any(said in note for note in older["notes"])
    assert any(f"the figures assume vllm {ENGINES['vllm'].version}" in note for note in today["notes"])


@pytest.mark.parametrize(
    ("command", "engine"),
    [(PREDICT, "vllm@0.9"), (RECOMMEND, "vllm@2019"), (PREDICT, "tensorrt-llm@2024"), (PREDICT, "vllm@0")],
)
def test_a_build_without_dated_rows_is_refused_in_one_line_naming_those_with_rows(
    command: tuple[str, ...], engine: str
) -> None:
    completed = run_perdollar(*command, "--engine", engine)
    assert completed.returncode == 2
    assert "Traceback" not in completed.stderr and len(completed.stderr.strip().splitlines()) == 1
    name = engine.partition("@")[0]
    assert f"--engine {engine}" in completed.stderr
    assert f"use --engine {name} (today's build, {ENGINES[name].version})" in completed.stderr
    for build in engine_builds(name):
        assert f"{name}@{build.year} ({', '.join(build.versions)})" in completed.stderr
    if not engine_builds(name):
        assert f"no build of {name} has dated rows" in completed.stderr
