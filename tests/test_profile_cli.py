"""`perdollar profile` as a user runs it: its command line, JSON on stdout, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli_runner import run_perdollar


def test_profile_json_has_the_documented_fields() -> None:
    done = run_perdollar("profile", "resnet50", "--batch-size", "2", "--json", timeout=240)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["workload"] == "resnet50" and data["batch_size"] == 2 and data["precision"] == "amp-fp16"
    assert 3.98 < data["forward_flops_per_sample"] / 2e9 < 4.22
    assert data["flops_per_sample"] > 2.9 * data["forward_flops_per_sample"]
    assert data["bytes_per_sample"] > 0 and data["params"] == 25_557_032
    memory = data["memory"]
    parts = ("weights", "gradients", "optimizer_state", "activations", "workspace")
    assert memory["total"] == sum(memory[p] for p in parts)
    assert {op["class"] for op in data["operators"]} >= {"conv", "normalization", "optimizer"}
    assert all(op["flops"] >= 0 and op["bytes_read"] >= 0 for op in data["operators"])


def test_profile_user_file_with_readable_summary(tmp_path: Path) -> None:
    (tmp_path / "my_model.py").write_text(
        "import torch\n"
        "from perdollar.workload import Workload\n\n"
        "def build():\n"
        "    return Workload(name='mine', model_factory=lambda: torch.nn.Linear(64, 8),\n"
        "                    input_factory=lambda b, d: (torch.randn(b, 64, device=d),\n"
        "                                                torch.randint(0, 8, (b,), device=d)),\n"
        "                    batch_size=4)\n"
    )
    done = run_perdollar("profile", "my_model.py:build", "--precision", "amp-bf16", cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    for text in (
        "mine",
        "amp-bf16",
        "FLOP",
        "arithmetic intensity",
        "Top operators by FLOPs",
        "Top operators by bytes",
        "optimizer state",
        "activations",
    ):
        assert text in done.stdout


def test_missing_file_is_one_line_with_exit_2(tmp_path: Path) -> None:
    done = run_perdollar("profile", "no_such.py:build", cwd=tmp_path, timeout=240)
    assert done.returncode == 2
    assert "does not exist" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["profile", "mlp", "--precision", "fp7"], "unknown precision 'fp7'"),
        (["profile", "resnet5"], "did you mean 'resnet50'"),
        (["profile", "mlp", "--batch-size", "0"], "positive integer"),
    ],
)
def test_bad_options_are_one_line_errors(
    args: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from perdollar.cli import main

    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
