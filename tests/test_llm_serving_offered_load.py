"""`perdollar predict LLM --inference --concurrency N / --rps R`: latencies at the load a benchmark states."""

from __future__ import annotations

import json
import math

import pytest

from cli_runner import run_perdollar
from perdollar import catalog
from perdollar.ask.llm_serving_prediction import load_architecture
from perdollar.predict.llm_serving import GroupShape, RequestShape, prefill_time, serving_format
from perdollar.predict.llm_serving.engines import serving_engine
from perdollar.predict.llm_serving.offered_load import (
    OfferedLoad,
    at_offered_load,
    prefill_token_budget,
)
from perdollar.predict.llm_serving.scheduler import step_model

H100 = ("llama-3.1-8b", "--inference", "--accelerator", "H100", "--gpus", "1")
LONG = ("--input-tokens", "20000", "--output-tokens", "2000")
SHORT = ("--input-tokens", "1000", "--output-tokens", "300")
QUANTILES = ("ttft", "tpot", "itl", "e2e")


def _predict(*args: str) -> dict:
    done = run_perdollar("predict", *args, "--json", columns=200)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_eight_in_flight_wait_for_their_own_prompt_not_eight_prompts_at_once() -> None:
    loaded = _predict(*H100, *LONG, "--concurrency", "8")
    batched = _predict(*H100, *LONG, "--batch", "8")
    assert loaded["mode"] == "concurrency" and loaded["concurrency"] == 8
    for name in QUANTILES:
        assert loaded[f"{name}_p99_ms"] >= loaded[f"{name}_p50_ms"] > 0, name
    # A static batch prefills the 8 prompts together; in flight, each prompt is chunked beside the
    # others' decode tokens, so its first token waits for about one prompt's prefill, not eight.
    assert loaded["ttft_p50_ms"] < batched["ttft_ms"] / 4
    assert loaded["ttft_ms"] <= loaded["ttft_p50_ms"] < 1.5 * loaded["ttft_ms"]
    assert loaded["engine_build"] == "vllm 0.10" and loaded["prefill_token_budget"] == 8192
    assert loaded["over_capacity"] is False and loaded["queue"] == "steady"
    # Little's law in a closed loop: eight in flight, each for its end-to-end latency.
    served = loaded["requests_per_second"]
    assert served * loaded["e2e_p50_ms"] / 1e3 == pytest.approx(8, rel=0.02)
    assert loaded["output_tokens_per_second"] == pytest.approx(served * 2000)
    for key in ("ttft_p50_ms", "tpot_p50_ms", "itl_p50_ms", "e2e_p50_ms"):
        assert key in loaded["units"]
    # Each quantile at the load carries its figure's held-out band, around it.
    for name in ("ttft", "tpot"):
        for quantile in ("p50", "p99"):
            band = loaded["bands"][f"{name}_{quantile}"]
            assert band["low"] < loaded[f"{name}_{quantile}_ms"] < band["high"] and band["group"]


def test_one_in_flight_is_the_single_request_figure() -> None:
    one = _predict(*H100, *LONG, "--concurrency", "1")
    alone = _predict(*H100, *LONG, "--batch", "1")
    # Its prompt runs in three chunks of the token budget (a host step more each); nothing queues.
    assert one["ttft_p50_ms"] == pytest.approx(alone["ttft_ms"], rel=0.02)
    assert one["tpot_p50_ms"] == pytest.approx(alone["tpot_ms"], rel=0.02)
    assert one["ttft_p99_ms"] == pytest.approx(one["ttft_p50_ms"], rel=0.01)


def test_poisson_arrivals_spread_the_latencies_and_past_capacity_the_queue_grows() -> None:
    saturated = _predict(*H100, *SHORT, "--concurrency", "4000")
    capacity = saturated["capacity_requests_per_second"]
    steady = _predict(*H100, *SHORT, "--rps", f"{0.6 * capacity:.4f}")
    assert steady["over_capacity"] is False and steady["mode"] == "rate"
    assert steady["requests_per_second"] == pytest.approx(0.6 * capacity, rel=1e-3)
    for name in QUANTILES:
        assert steady[f"{name}_p99_ms"] >= steady[f"{name}_p50_ms"] > 0, name
    assert steady["ttft_p99_ms"] > 1.5 * steady["ttft_p50_ms"]  # arrivals bunch up: a tail
    over = _predict(*H100, *SHORT, "--rps", f"{1.1 * capacity:.4f}")
    assert over["over_capacity"] is True and over["queue"] == "grows without bound"
    assert all(over[f"{name}_{q}_ms"] is None for name in QUANTILES for q in ("p50", "p99"))
    assert over["requests_per_second"] == pytest.approx(capacity)
    text = run_perdollar("predict", *H100, *SHORT, "--rps", f"{1.1 * capacity:.4f}", columns=300)
    assert text.returncode == 0 and "over capacity" in text.stdout and "grows without bound" in text.stdout


def test_a_rate_the_maximum_load_figure_would_take_but_the_scheduler_cannot_is_over_capacity() -> None:
    # Long prompts chunked at the budget run compute-bound steps the maximum-load figure spreads
    # thin: a rate between the two is a queue that grows, not a latency.
    ceiling = _predict(*H100, *LONG)["requests_per_second"]
    capacity = _predict(*H100, *LONG, "--concurrency", "1")["capacity_requests_per_second"]
    assert capacity < ceiling
    between = _predict(*H100, *LONG, "--rps", f"{(capacity + ceiling) / 2:.4f}")
    assert between["over_capacity"] is True


def test_clients_past_what_fits_wait_in_the_queue() -> None:
    fits = _predict(*H100, *LONG, "--concurrency", "20")
    crowded = _predict(*H100, *LONG, "--concurrency", "40")
    assert fits["running_cap"] == crowded["running_cap"] == 20
    assert crowded["mean_running"] == pytest.approx(20, rel=0.01)
    # Twenty more wait a whole turn of the twenty running: about one end-to-end latency.
    assert crowded["ttft_p50_ms"] > fits["e2e_p50_ms"] * 0.8
    assert crowded["requests_per_second"] == pytest.approx(fits["requests_per_second"], rel=0.02)
    text = run_perdollar("predict", *H100, *LONG, "--concurrency", "40", columns=300).stdout
    assert "wait in the queue" in text and "latency p50 / p99: TTFT" in text and "vllm 0.10" in text


def test_clients_spread_over_replicas() -> None:
    one = _predict(*H100, *LONG, "--concurrency", "8")
    two = _predict(*H100[:-1], "2", "--tensor-parallel", "1", *LONG, "--concurrency", "16")
    assert two["replicas"] == 2
    assert two["ttft_p50_ms"] == pytest.approx(one["ttft_p50_ms"])
    assert two["output_tokens_per_second"] == pytest.approx(2 * one["output_tokens_per_second"])


def test_the_simulation_is_deterministic_and_follows_the_engine_budget() -> None:
    arch = load_architecture("llama-3.1-8b")
    chips = catalog.load()
    h100, a100 = chips.accelerator("H100"), chips.accelerator("A100-SXM4-80GB")
    assert prefill_token_budget("vllm", h100) == 8192
    assert prefill_token_budget("vllm", a100) == 2048  # vLLM keeps the A100 at the smaller budget
    assert prefill_token_budget("hf", h100) is None
    engine = serving_engine("vllm")
    fmt, work = engine.serving_format(serving_format("fp16")), RequestShape(20000, 2000)
    args = (arch, h100, fmt, work, OfferedLoad(concurrency=8))
    runs = [at_offered_load(*args, running_cap=20, budget=8192, efficiency=engine.step_efficiency())
            for _ in range(2)]  # fmt: skip
    assert runs[0] == runs[1]
    # Without chunking, eight clients started together stay in step: every prompt is prefilled with
    # the seven others, the static batch's first token.
    whole = at_offered_load(*args, running_cap=20, budget=None, efficiency=engine.step_efficiency())
    together = prefill_time(arch, fmt, h100, GroupShape(), 20000, engine.step_efficiency(), sequences=8)
    assert whole.ttft_ms.p50 == pytest.approx(together.seconds * 1e3, rel=0.01)
    assert runs[0].ttft_ms.p50 < whole.ttft_ms.p50 / 4
    step = step_model(arch, fmt, h100, GroupShape(), work, engine.step_efficiency())
    # A prompt in chunks costs its pairs and tokens once over: about the prompt alone.
    chunked = step(0, ((0, 8192),)) + step(0, ((8192, 8192),)) + step(0, ((16384, 3616),))
    assert chunked == pytest.approx(step(0, ((0, 20000),)), rel=0.03)


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (("--concurrency", "0"), "--concurrency must be a positive integer, got 0"),
        (("--concurrency", "-3"), "--concurrency cannot be negative, got -3"),
        (("--concurrency", "1000001"), "above the 100,000"),
        (("--rps", "0"), "--rps must be positive, got 0"),
        (("--rps", "-2"), "--rps cannot be negative, got -2"),
        (("--rps", "nan"), "--rps must be a finite number, got nan"),
        (("--rps", "inf"), "--rps must be a finite number, got inf"),
        (("--concurrency", "8", "--rps", "1"), "--concurrency and --rps each fix the load"),
        (("--concurrency", "8", "--batch", "8"), "--batch and --concurrency each fix the load"),
        (("--rps", "1", "--disaggregate", "1P1D", "--gpus", "2"), "--rps is modelled on replicas"),
    ],
)
def test_a_load_that_names_nothing_is_refused_in_one_line(extra: tuple[str, ...], words: str) -> None:
    base = [arg for arg in H100 if arg not in ("--gpus", "1")] if "--gpus" in extra else list(H100)
    done = run_perdollar("predict", *base, *SHORT, *extra, columns=300)
    assert done.returncode == 2, done.stdout
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_the_python_form_refuses_what_the_command_line_refuses() -> None:
    from perdollar.ask.predicting import PredictionAsked, predict_configuration
    from perdollar.errors import PerdollarError
    from perdollar.question import LanguageModelSettings

    settings = LanguageModelSettings(input_tokens=1000, output_tokens=300)
    for concurrency, rate, words in ((0, None, "--concurrency 0 is not a count"),
                                     (None, math.nan, "--rps nan is not a request rate"),
                                     (None, -1.0, "--rps -1.0 is not a request rate"),
                                     (True, None, "--concurrency True is not a count")):  # fmt: skip
        asked = PredictionAsked("llama-3.1-8b", inference=True, accelerator="H100", settings=settings,
                                concurrency=concurrency, requests_per_second=rate)  # fmt: skip
        with pytest.raises(PerdollarError, match=words):
            predict_configuration(asked)


def test_a_load_on_a_prediction_that_has_none_is_refused() -> None:
    network = run_perdollar("predict", "resnet50", "--instance", "g5.xlarge", "--concurrency", "4")
    assert network.returncode == 2 and network.stderr.count("\n") == 1
    assert "--concurrency is the load of a language model served" in network.stderr
    own_stack = run_perdollar("predict", "llama-3.1-8b", "--inference", "--accelerator", "Inferentia2",
                              "--gpus", "2", *SHORT, "--rps", "1", columns=300)  # fmt: skip
    assert own_stack.returncode == 2 and own_stack.stderr.count("\n") == 1
    assert "modelled for the GPU serving engines" in own_stack.stderr
