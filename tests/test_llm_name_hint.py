"""A language model's options on a mistyped model name point at the model that was meant."""

from __future__ import annotations

import pytest

from cli_runner import run_perdollar


@pytest.mark.parametrize(
    "args",
    [
        ("recommend", "lama-3.1-8b", "--tokens", "1e9"),
        ("predict", "llama_3.1_8", "--instance", "p5.48xlarge", "--seq-len", "2048"),
    ],
)
def test_language_model_options_on_a_near_miss_name_say_which_model(args: tuple[str, ...]) -> None:
    done = run_perdollar(*args)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1000:]
    assert "did you mean 'llama-3.1-8b'?" in lines[0] and f"{args[1]!r} is not one" in lines[0]


def test_a_vision_workload_with_language_model_options_gets_no_guess() -> None:
    done = run_perdollar("recommend", "vit-b16", "--tokens", "1e9")
    assert done.returncode == 2 and "did you mean" not in done.stderr
    assert "give a language model" in done.stderr
