"""An option a question cannot use is refused in one line, never silently dropped."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.amounts import data_size_bytes
from perdollar.errors import PerdollarError


@pytest.mark.parametrize("flag", ["--load-curve", "--trace"])
def test_a_serving_traffic_file_on_a_training_question_is_refused(flag: str, tmp_path: Path) -> None:
    traffic = tmp_path / "traffic.csv"
    traffic.write_text("hour,requests_per_second\n0,5\n")
    done = run_perdollar("recommend", "llama-3.1-8b", "--tokens", "2e9", flag, str(traffic), "--no-store")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert len(lines) == 1 and f"{flag} is for serving questions" in lines[0] and "--inference" in lines[0]


TRAINING_QUESTIONS = {
    "recommend": ("recommend", "llama-3.1-8b", "--tokens", "2e9"),
    "compare": ("compare", "llama-3.1-8b", "1x p5.48xlarge", "--tokens", "2e9"),
}


@pytest.mark.parametrize("flag", ["--ttft-p99-ms", "--tpot-p99-ms"])
@pytest.mark.parametrize("command", list(TRAINING_QUESTIONS))
def test_a_served_models_latency_objective_on_a_training_question_is_refused(command: str, flag: str) -> None:
    # A training run has no time to first token: the limit would be dropped without a word.
    done = run_perdollar(*TRAINING_QUESTIONS[command], flag, "100", "--no-store")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert len(lines) == 1 and f"{flag} is for serving questions" in lines[0] and "--inference" in lines[0]


@pytest.mark.parametrize("text", ["1e400TB", "1e309B", "9e300PiB"])
def test_a_data_size_too_large_for_a_number_is_refused(text: str) -> None:
    with pytest.raises(PerdollarError, match="too large to be a number of bytes"):
        data_size_bytes(text)


def test_a_data_size_on_the_command_line_too_large_for_a_number_is_one_line() -> None:
    done = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--dataset-size", "1e400TB",
                         "--data-region", "us-east-1", "--no-store")  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "1e400TB" in lines[0], done.stderr[-1500:]


def test_sizes_that_are_numbers_still_read() -> None:
    assert data_size_bytes("20TB") == 2e13 and data_size_bytes("1.5TiB") == 1.5 * 2**40
    assert data_size_bytes("1.28M") is None  # samples, not bytes


@pytest.mark.parametrize(
    ("objective", "words"),
    [("carbn", "unknown objective 'carbn'"), ("time", "--objective time ranks training runs")],
)
def test_a_serving_objective_that_cannot_rank_a_deployment_is_refused(objective: str, words: str) -> None:
    done = run_perdollar("recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--objective", objective,
                         "--no-store")  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and words in lines[0], done.stderr[-1500:]


# A data size prices moving the data from --data-region; an epoch's size only --epochs multiplies.
DATA_SIZE_DROPS = [
    (("vit-b16", "--samples", "1e9", "--dataset-size", "20TB"), "no --data-region says where"),
    (("vit-b16", "--samples", "1e9", "--dataset-size", "1.28M"), "counts an epoch's samples"),
    (("llama-3.1-8b", "--tokens", "1e9", "--dataset-size", "500GB"), "no --data-region says where"),
    (("llama-3.1-8b", "--tokens", "1e9", "--epochs", "2", "--dataset-size", "1.28M"),
     "--tokens already sets it"),
    (("resnet50", "--inference", "--qps", "200", "--p99-ms", "50", "--dataset-size", "20TB"),
     "--dataset-size is for training questions"),
    (("llama-3.1-8b", "--inference", "--rps", "2", "--dataset-size", "20TB", "--data-region", "us-east-1"),
     "--dataset-size is for training questions"),
    (("resnet50", "--inference", "--qps", "200", "--p99-ms", "50", "--data-region", "us-east-1"),
     "serving a network moves neither"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "expected"), DATA_SIZE_DROPS)
def test_a_data_size_that_would_price_nothing_is_refused(args: tuple[str, ...], expected: str) -> None:
    done = run_perdollar("recommend", *args, "--no-store", "--top", "1")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], done.stderr[-1500:]


def test_a_data_size_without_a_region_is_refused_by_the_python_api_too() -> None:
    from perdollar.ask import answer
    from perdollar.goals import TrainingGoal
    from perdollar.question import DataSettings, Question

    question = Question(
        workload_name="vit-b16", goal=TrainingGoal(target_samples=1e9), data=DataSettings(dataset_bytes=2e13)
    )
    with pytest.raises(PerdollarError, match="add --data-region REGION"):
        answer(question)


@pytest.mark.parametrize(
    "feature", [("--speculative", "draft-model"), ("--prefix-share", "0.5"), ("--disaggregate", "1P1D")]
)
def test_a_steady_rate_feature_on_a_daily_fleet_is_refused(feature: tuple[str, str], tmp_path: Path) -> None:
    curve = tmp_path / "curve.csv"
    curve.write_text("hour,requests_per_second\n0,1\n1,2\n")
    done = run_perdollar("recommend", "llama-3.1-8b", "--inference", "--load-curve", str(curve), *feature,
                         "--no-store")  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert f"{feature[0]} is predicted for a steady rate" in lines[0]


def test_rps_and_qps_name_one_rate_for_either_kind_of_model() -> None:
    network = ("recommend", "resnet50", "--inference", "--p99-ms", "50", "--cloud", "aws", "--json")
    network = (*network, "--no-store")
    by_qps = json.loads(run_perdollar(*network, "--qps", "200").stdout)
    by_rps = json.loads(run_perdollar(*network, "--rps", "200").stdout)
    assert by_rps["question"]["serving"]["qps"] == 200
    assert [d["label"] for d in by_rps["deployments"]] == [d["label"] for d in by_qps["deployments"]]
    model = ("recommend", "llama-3.1-8b", "--inference", "--input-tokens", "1000", "--output-tokens", "300",
             "--cloud", "aws", "--json", "--no-store")  # fmt: skip
    by_qps = json.loads(run_perdollar(*model, "--qps", "5").stdout)
    by_rps = json.loads(run_perdollar(*model, "--rps", "5").stdout)
    assert [d["label"] for d in by_qps["deployments"]] == [d["label"] for d in by_rps["deployments"]]
    twice = run_perdollar(*model, "--qps", "5", "--rps", "6")
    assert twice.returncode == 2 and "name one rate twice" in twice.stderr


def test_predict_serves_a_language_model_on_an_instance_as_training_names_it() -> None:
    args = ("predict", "llama-3.1-8b", "--inference", "--input-tokens", "1000", "--output-tokens", "300")
    args = (*args, "--json")
    on_instance = json.loads(run_perdollar(*args, "--instance", "p5.48xlarge").stdout)
    on_chips = json.loads(run_perdollar(*args, "--accelerator", "H100", "--gpus", "8").stdout)
    assert on_instance == on_chips
    refused = run_perdollar(*args, "--instance", "p5.48xlarge", "--gpus", "4")
    assert refused.returncode == 2 and "disagree" in refused.stderr
    refused = run_perdollar(*args, "--instance", "g5.xlarge", "--accelerator", "H100")
    assert refused.returncode == 2 and "name two chips" in refused.stderr


def test_a_serving_question_without_a_ttft_limit_keeps_a_stated_ceiling() -> None:
    args = ("recommend", "llama-3.1-8b", "--inference", "--rps", "2", "--input-tokens", "60000")
    args = (*args, "--output-tokens", "100", "--json", "--no-store", "--top", "50")
    unbounded = json.loads(run_perdollar(*args, "--ttft-p99-ms", "1e9").stdout)
    assert any(row["ttft_p99_ms"] > 10_000 for row in unbounded["deployments"])  # the ceiling binds here
    answer = json.loads(run_perdollar(*args).stdout)
    assert answer["deployments"] and all(row["ttft_p99_ms"] <= 10_000 for row in answer["deployments"])
    assert any(note.startswith("no --ttft-p99-ms given") for note in answer["notes"])
    assert answer["question"]["language_model"]["ttft_p99_ms"] == 10_000


def test_engine_any_gives_each_engine_the_best_deployment_a_run_naming_it_finds() -> None:
    args = ("recommend", "llama-3.1-8b", "--inference", "--rps", "20", "--input-tokens", "1000")
    args = (*args, "--output-tokens", "300", "--ttft-p99-ms", "500", "--tpot-p99-ms", "50")
    args = (*args, "--json", "--no-store")
    every = json.loads(run_perdollar(*args, "--engine", "any").stdout)
    line = next(x for x in every["explanation"].splitlines() if "output tokens by engine" in x)
    by_engine = dict(re.findall(r"([a-z.\-]+) \$([\d.e\-]+)", line.split(": ", 1)[1]))
    assert {"vllm", "sglang", "tensorrt-llm"} <= set(by_engine)
    for engine in ("vllm", "sglang", "tensorrt-llm"):
        alone = json.loads(run_perdollar(*args, "--engine", engine).stdout)
        assert by_engine[engine] == f"{alone['deployments'][0]['usd_per_million_output_tokens']:.3g}", engine
