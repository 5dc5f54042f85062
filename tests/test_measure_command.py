"""`perdollar bench -- COMMAND`: the throughput-line parser and running a real command."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.measure.command import (
    command_name,
    compile_pattern,
    parse_throughput,
    run_command,
    steady_readings,
)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("step 100: 312.5 samples/second", 312.5),
        ("throughput 1,234.5 samples/sec loss 0.31", 1234.5),
        ("2.5e3 samples/s", 2500.0),
        ("450 sample/s", 450.0),
        ("88 samples per second", 88.0),
        ("[rank0] epoch 1 | 97 SAMPLES/SECOND", 97.0),
    ],
)
def test_default_pattern_reads_common_spellings(line: str, expected: float) -> None:
    assert parse_throughput(line, compile_pattern(None)) == pytest.approx(expected)


@pytest.mark.parametrize("line", ["loss 0.31 lr 3e-4", "100 samples in total", "samples/second: n/a", ""])
def test_lines_without_a_rate_are_ignored(line: str) -> None:
    assert parse_throughput(line, compile_pattern(None)) is None


def test_custom_pattern_with_a_group() -> None:
    pattern = compile_pattern(r"([0-9.]+) img/s")
    assert parse_throughput("epoch 3: 812.25 img/s", pattern) == pytest.approx(812.25)
    assert parse_throughput("epoch 3: 812.25 samples/second", pattern) is None


def test_custom_pattern_with_a_named_group() -> None:
    pattern = compile_pattern(r"tok/s=(?P<value>[0-9.]+) step=([0-9]+)")
    assert parse_throughput("tok/s=55.5 step=10", pattern) == pytest.approx(55.5)


@pytest.mark.parametrize("bad", ["([0-9]+", "no group here"])
def test_bad_patterns_are_one_line_errors(bad: str) -> None:
    with pytest.raises(PerdollarError) as caught:
        compile_pattern(bad)
    assert caught.value.fix


def test_warm_up_readings_are_dropped() -> None:
    readings = [20.0, 60.0, 90.0, 100.0, 101.0, 99.0, 100.0, 100.5, 99.5, 100.0, 101.0]
    used, reached = steady_readings(readings)
    assert reached
    assert min(used) >= 99.0
    assert len(used) >= 7


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def test_a_real_command_is_measured(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        rates = [40, 70, 95] + [100 + (i % 3) for i in range(12)]
        for step, rate in enumerate(rates):
            print(f"step {step} loss 0.5 {rate} samples/second", flush=True)
    """,
    )
    measurement = run_command([sys.executable, str(script)])
    assert measurement.status == "ok"
    assert measurement.mode == "command"
    assert measurement.samples_per_second is not None
    assert 100 <= measurement.samples_per_second.median <= 102
    assert measurement.extra["readings"][:3] == [40.0, 70.0, 95.0]


def test_a_failing_command_is_an_error_result(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        print("10 samples/second", flush=True)
        raise SystemExit("diverged: loss is nan")
    """,
    )
    measurement = run_command([sys.executable, str(script)])
    assert measurement.status == "error"
    assert "diverged" in measurement.message


def test_a_command_that_prints_no_rate_says_so(tmp_path: Path) -> None:
    script = _script(tmp_path, 'print("hello")\n')
    measurement = run_command([sys.executable, str(script)])
    assert measurement.status == "error"
    assert "--pattern" in measurement.message


def test_a_command_is_stopped_after_the_duration(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        import time
        while True:
            print("50 samples/second", flush=True)
            time.sleep(0.05)
    """,
    )
    measurement = run_command([sys.executable, str(script)], duration_s=1.5)
    assert measurement.status == "ok"
    assert measurement.samples_per_second is not None
    assert measurement.samples_per_second.median == pytest.approx(50)


def test_a_command_past_its_timeout_is_a_timeout_result(tmp_path: Path) -> None:
    script = _script(tmp_path, "import time\ntime.sleep(60)\n")
    measurement = run_command([sys.executable, str(script)], timeout_s=1)
    assert measurement.status == "timeout"


def test_cli_runs_a_command_after_double_dash(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        for i in range(12):
            print(f"{200 + i % 2} img/s", flush=True)
    """,
    )
    completed = run_perdollar(
        "bench", "--json", "--no-store", "--pattern", r"([0-9.]+) img/s", "--", sys.executable, str(script)
    )
    assert completed.returncode == 0, completed.stderr
    document = json.loads(completed.stdout)
    assert document["status"] == "ok"
    assert 200 <= document["samples_per_second"]["median"] <= 201


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["python", "train.py", "--lr", "1e-3"], "train.py"),
        (["/usr/bin/python3", "-u", "scripts/finetune.py"], "finetune.py"),
        (["python", "-m", "pkg.train"], "pkg.train"),
        (["torchrun", "--nproc_per_node", "2", "train.py"], "train.py"),
        (["accelerate", "launch", "run_glue.py"], "run_glue.py"),
        (["./train.sh"], "train.sh"),
        (["python", "-c", "print(1)"], "python -c"),
        (["my-trainer", "--epochs", "3"], "my-trainer"),
    ],
)
def test_a_command_is_named_as_its_user_knows_it(argv: list[str], name: str) -> None:
    assert command_name(argv) == name


def test_a_measured_command_is_stored_under_its_scripts_name(tmp_path: Path) -> None:
    script = _script(
        tmp_path,
        """
        for step in range(12):
            print(f"step {step} 100 samples/second", flush=True)
    """,
    )
    assert run_command([sys.executable, str(script)]).workload_name == f"command:{script.name}"
