"""`perdollar validate` runs as the README and its help show it, on the sample shipped with perdollar,
and says in one line when a naive baseline predicts the given file better than perdollar does."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from cli_runner import run_perdollar

README = Path(__file__).resolve().parents[1] / "README.md"
DATA = Path(__file__).parent / "data"


def _readme_validate_commands() -> list[list[str]]:
    lines = re.findall(r"^perdollar (validate[^#\n]*)", README.read_text(encoding="utf-8"), re.MULTILINE)
    return [shlex.split(line) for line in lines]


def test_the_readmes_validate_example_runs_in_an_empty_folder(tmp_path: Path) -> None:
    commands = _readme_validate_commands()
    assert commands, "the README shows no validate example"
    for command in commands:
        done = run_perdollar(*command, cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr[-1500:])
        assert "Absolute percentage error of throughput" in done.stdout


def test_without_a_file_the_shipped_sample_is_validated() -> None:
    done = run_perdollar("validate", "--target-gpus", "T4", "--json")
    assert done.returncode == 0, done.stderr[-1500:]
    result = json.loads(done.stdout)
    assert Path(result["file"]).name == "published_sample.csv" and result["pairs"] > 0
    assert result["beaten_by"] == []  # on these ResNet-50 tables perdollar beats every naive ratio


def test_a_naive_baseline_that_beats_perdollar_is_said_in_one_line() -> None:
    # Lambda's TensorFlow VGG-16 figures: the anchor scaled by the geometric mean of the bandwidth
    # and FLOPS ratios lands closer than perdollar's calibrated prediction.
    file = DATA / "published_vgg16_tf.csv"
    result = json.loads(run_perdollar("validate", str(file), "--json").stdout)
    assert result["beaten_by"] and result["beaten_by"][0] == "geometric_mean"
    ours = result["calibrated_all"]["median_ape"]
    assert all(result["baselines"][name]["median_ape"] < ours for name in result["beaten_by"])
    text = run_perdollar("validate", str(file)).stdout
    said = [line for line in text.splitlines() if "naive baseline beats perdollar" in line]
    assert len(said) == 1 and "geometric mean" in said[0] and f"{100 * ours:.1f}%" in said[0]
