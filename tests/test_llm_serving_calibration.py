"""A measured endpoint (`serve-bench MODEL --url`) calibrates that model's serving predictions elsewhere."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from llm_stream_server import streaming_server
from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.calibrate import EndpointReading, _cases, calibrate, impossible_reason
from perdollar.predict.llm_serving.engines import ENGINES
from perdollar.predict.llm_serving.published import predict_case
from perdollar.predict.llm_serving.timing import DEFAULT_EFFICIENCY
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.workload import reference_for_served_name


@pytest.mark.parametrize(
    ("served", "known"),
    [("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"), ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
     ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"), ("my-finetune", None)],
)  # fmt: skip
def test_a_served_name_maps_to_the_built_in_model(served: str, known: str | None) -> None:
    assert reference_for_served_name(served) == known


def test_a_slower_endpoint_slows_the_predictions_of_other_chips() -> None:
    catalog = catalog_mod.load()
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    chips = {key: catalog.accelerators[key] for key in ("L4", "H100-SXM5-80GB")}
    probe = EndpointReading("L4", 1, "fp16", 256, 128, tpot_ms=1.0, ttft_ms=1.0)
    decode, first = _cases(probe, arch)
    predicted_tpot_ms = 1e3 / (predict_case(decode, chips["L4"], DEFAULT_EFFICIENCY) or 1.0)
    predicted_ttft_ms = predict_case(first, chips["L4"], DEFAULT_EFFICIENCY) or 1.0
    # The endpoint is 1.6 times slower than predicted at decoding, as fast at the prompt.
    slow = replace(probe, tpot_ms=1.6 * predicted_tpot_ms, ttft_ms=predicted_ttft_ms)
    calibration = calibrate([slow], arch, chips, DEFAULT_EFFICIENCY)
    assert calibration is not None
    assert max(abs(r - 1) for r in calibration.after) < max(abs(r - 1) for r in calibration.before)
    elsewhere = replace(decode, gpu="H100-SXM5-80GB")
    before = predict_case(elsewhere, chips["H100-SXM5-80GB"], DEFAULT_EFFICIENCY) or 0.0
    after = predict_case(elsewhere, chips["H100-SXM5-80GB"], calibration.efficiency) or 0.0
    assert after < before / 1.2  # fewer tokens/s on a chip never measured
    assert "1× L4 fp16" in calibration.describe("llama-3.1-8b")


def test_a_host_bound_reading_moves_the_bandwidth_of_other_chips_by_its_share_only() -> None:
    catalog = catalog_mod.load()
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    chips = {key: catalog.accelerators[key] for key in ("H100-SXM5-80GB", "L4")}
    transformers = ENGINES["hf"].step_efficiency()  # about 14 ms of host time in every step
    probe = EndpointReading("H100-SXM5-80GB", 1, "fp16", 1000, 200, tpot_ms=1.0, ttft_ms=1.0, engine="hf")
    decode, first = _cases(probe, arch)
    predicted_tpot_ms = 1e3 / (predict_case(decode, chips["H100-SXM5-80GB"], transformers) or 1.0)
    predicted_ttft_ms = predict_case(first, chips["H100-SXM5-80GB"], transformers) or 1.0
    assert transformers.step_overhead_s * 1e3 > predicted_tpot_ms / 2  # the step is mostly host time
    # 30% slower per output token than predicted, as fast at the prompt.
    slow = replace(probe, tpot_ms=1.3 * predicted_tpot_ms, ttft_ms=predicted_ttft_ms)
    calibration = calibrate([slow], arch, chips, transformers, engine="hf")
    assert calibration is not None
    # The host time is the measured machine's: it is not carried to other instance types.
    assert calibration.efficiency.step_overhead_s == transformers.step_overhead_s
    elsewhere = replace(decode, gpu="L4")  # a bandwidth-bound step: the weights take 50 ms to read
    before = predict_case(elsewhere, chips["L4"], transformers) or 0.0
    after = predict_case(elsewhere, chips["L4"], calibration.efficiency) or 0.0
    # The GPU's part of the reading is slower too, but only the part of the 30% it accounts for
    # moves to the L4 (all of it put on the bandwidth would slow the L4 by 1.5× or more).
    assert before / 1.3 < after < before / 1.02


def test_serve_bench_of_a_named_model_calibrates_recommend(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with streaming_server(0.4, 0.15, max_seconds=120) as url:
        measured = run_perdollar("serve-bench", "--url", url, "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--accelerator", "L4", "--rates", "0.5", "--max-requests", "3",
                                 "--input-tokens", "64", "--output-tokens", "8", "--step-seconds", "10",
                                 "--json", store=store, columns=200)  # fmt: skip
    assert measured.returncode == 0, measured.stderr[-1500:]
    question = ("recommend", "llama-3.1-8b", "--inference", "--rps", "1", "--input-tokens", "64",
                "--output-tokens", "8", "--precision", "fp16", "--json")  # fmt: skip
    calibrated = json.loads(run_perdollar(*question, store=store, columns=200).stdout)
    shipped = json.loads(run_perdollar(*question, "--no-store", store=store, columns=200).stdout)
    assert any("calibrated on 1 measured endpoint run(s) of llama-3.1-8b (1× L4 fp16)" in note
               for note in calibrated["notes"])  # fmt: skip
    assert not any("calibrated" in note for note in shipped["notes"])
    # The run named no engine, so it is taken as the asked (default) engine's: vLLM's rows move;
    # chips served by their own stacks (Neuron …) keep their own fit.
    tpot = {row["label"]: row["tpot_p99_ms"] for row in shipped["deployments"] if row["engine"] == "vllm"}
    slower = [row["tpot_p99_ms"] / tpot[row["label"]]
              for row in calibrated["deployments"] if row["label"] in tpot]  # fmt: skip
    assert slower and min(slower) > 1.1  # a 150 ms/token endpoint on an L4 is slower than shipped
    assert {row["basis"] for row in calibrated["deployments"] if row["engine"] == "vllm"} == {"calibrated"}
    assert {row["basis"] for row in calibrated["deployments"] if row["engine"] != "vllm"} <= {"spec"}
    assert {row["basis"] for row in shipped["deployments"]} == {"spec"}


def test_a_reading_beyond_the_chips_physical_limit_calibrates_nothing() -> None:
    catalog = catalog_mod.load()
    arch = load_llm_workload("llama-3.1-8b", kind="inference").architecture
    chips = {"L4": catalog.accelerators["L4"]}
    # 8B fp16 weights on an L4: ~15 GB at 300 GB/s, so no decode step is faster than ~50 ms.
    too_fast = EndpointReading("L4", 1, "fp16", 256, 128, tpot_ms=9.0, ttft_ms=500.0)
    reason = impossible_reason(too_fast, arch, chips["L4"])
    assert "9 ms" in reason and "50" in reason and "300 GB/s" in reason
    assert calibrate([too_fast], arch, chips, DEFAULT_EFFICIENCY) is None
    instant_prompt = replace(too_fast, tpot_ms=80.0, input_tokens=8192, ttft_ms=5.0)
    assert "peak fp16 rate" in impossible_reason(instant_prompt, arch, chips["L4"])
    plausible = replace(too_fast, tpot_ms=80.0)
    assert impossible_reason(plausible, arch, chips["L4"]) == ""
    calibration = calibrate([too_fast, plausible], arch, chips, DEFAULT_EFFICIENCY)
    assert calibration is not None and calibration.readings == (plausible,)
    assert len(calibration.refused) == 1 and "physical limit" in calibration.refused[0]


def test_serve_bench_flags_an_impossible_endpoint_and_recommend_says_why_it_is_not_used(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.db"
    with streaming_server(0.4, 0.009, max_seconds=120) as url:  # 9 ms a token "on an L4"
        measured = run_perdollar("serve-bench", "--url", url, "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--accelerator", "L4", "--rates", "0.5", "--max-requests", "3",
                                 "--input-tokens", "64", "--output-tokens", "8", "--step-seconds", "10",
                                 "--json", store=store, columns=200)  # fmt: skip
    assert measured.returncode == 0, measured.stderr[-1500:]
    warnings = json.loads(measured.stdout)["warnings"]
    assert any("beyond the physical limit" in w and "300 GB/s" in w for w in warnings)
    question = ("recommend", "llama-3.1-8b", "--inference", "--rps", "1", "--input-tokens", "64",
                "--output-tokens", "8", "--precision", "fp16", "--json")  # fmt: skip
    answer = json.loads(run_perdollar(*question, store=store, columns=200).stdout)
    assert not any("calibrated on" in note for note in answer["notes"])
    assert any("calibrates nothing" in note and "L4" in note for note in answer["notes"])
    assert {row["basis"] for row in answer["deployments"]} == {"spec"}


def test_serve_bench_records_the_engine_and_calibrates_only_its_predictions(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with streaming_server(0.4, 0.15, max_seconds=120) as url:
        measured = run_perdollar("serve-bench", "llama-3.1-8b", "--url", url, "--model", "served-llama",
                                 "--accelerator", "L4", "--engine", "SGLang", "--rates", "0.5",
                                 "--max-requests", "3", "--input-tokens", "64", "--output-tokens", "8",
                                 "--step-seconds", "10", "--json", store=store, columns=200)  # fmt: skip
    assert measured.returncode == 0, measured.stderr[-1500:]
    question = ("recommend", "llama-3.1-8b", "--inference", "--rps", "1", "--input-tokens", "64",
                "--output-tokens", "8", "--precision", "fp16", "--json")  # fmt: skip
    same = json.loads(run_perdollar(*question, "--engine", "sglang", store=store, columns=200).stdout)
    other = json.loads(run_perdollar(*question, "--engine", "vllm", store=store, columns=200).stdout)
    assert any("calibrated on 1 measured endpoint run(s)" in note for note in same["notes"])
    assert not any("calibrated on" in note for note in other["notes"])
    assert {row["engine"] for row in same["deployments"]} == {"sglang"}


def test_serve_bench_refuses_an_unknown_engine_before_running(tmp_path: Path) -> None:
    done = run_perdollar("serve-bench", "llama-3.1-8b", "--url", "http://127.0.0.1:9/v1", "--model", "m",
                         "--engine", "fastllm", store=tmp_path / "s.db", columns=200)  # fmt: skip
    assert done.returncode != 0
    assert "unknown serving engine 'fastllm'" in done.stderr
    assert not (tmp_path / "s.db").exists() or "fastllm" not in (tmp_path / "s.db").read_bytes().decode(
        "latin-1"
    )
