"""A workload that raises, runs out of memory, crashes or hangs is a recorded result, not a crash."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch

from perdollar.cli import main
from perdollar.measure.runner import run_benchmark
from perdollar.workload import Workload

WORKLOADS = textwrap.dedent("""
    import os
    import signal
    import time

    import torch
    from perdollar.workload import Workload


    def _inputs(batch_size, device):
        return (torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device))


    class Broken(torch.nn.Module):
        def __init__(self, behaviour):
            super().__init__()
            self.layer = torch.nn.Linear(8, 2)
            self.behaviour = behaviour

        def forward(self, x):
            if self.behaviour == "raise":
                raise ValueError("the model is broken on purpose")
            if self.behaviour == "huge":
                torch.ones(x.shape[0], 2**28)  # 1 GiB per sample
            if self.behaviour == "hang":
                time.sleep(3600)
            if self.behaviour == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            return self.layer(x)


    def _workload(behaviour):
        return Workload(name=f"broken-{behaviour}", model_factory=lambda: Broken(behaviour),
                        input_factory=_inputs, batch_size=4)


    def raises():
        return _workload("raise")


    def huge():
        return _workload("huge")


    def hangs():
        return _workload("hang")


    def crashes():
        return _workload("crash")
""")


@pytest.fixture(autouse=True)
def _quiet_children(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERDOLLAR_METADATA_URL", "off")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.py"
    path.write_text(WORKLOADS, encoding="utf-8")
    return path


def test_a_workload_that_raises_is_an_error_result(broken: Path) -> None:
    measurement = run_benchmark(f"{broken}:raises", duration_s=2, timeout_s=120)
    assert measurement.status == "error"
    assert "broken on purpose" in measurement.message
    assert measurement.samples_per_second is None
    assert measurement.workload_name == "broken-raise"
    assert "ValueError" in measurement.extra["traceback"]


def test_a_workload_that_allocates_too_much_is_an_oom_result(broken: Path) -> None:
    # 4 samples × 1 GiB against a 3 GiB address-space cap: the allocator refuses.
    measurement = run_benchmark(f"{broken}:huge", duration_s=2, timeout_s=120, memory_limit_bytes=3 * 2**30)
    assert measurement.status == "oom", measurement.message
    assert "memory" in measurement.message.lower()


def test_a_workload_that_hangs_is_a_timeout_result(broken: Path) -> None:
    measurement = run_benchmark(f"{broken}:hangs", duration_s=2, timeout_s=8)
    assert measurement.status == "timeout"
    assert "8 s" in measurement.message


def test_a_workload_that_crashes_the_interpreter_is_an_error_result(broken: Path) -> None:
    measurement = run_benchmark(f"{broken}:crashes", duration_s=2, timeout_s=120)
    assert measurement.status == "killed"
    assert "SIGSEGV" in measurement.message


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(["bench", *args])
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_the_cli_records_the_failure_and_exits_1(broken: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, f"{broken}:raises", "--duration", "2", "--json", "--no-store")
    assert code == 1, err
    document = json.loads(out)
    assert document["status"] == "error"
    assert "broken on purpose" in document["message"]


def test_bad_input_exits_2_without_running(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "no-such-workload", "--no-store")
    assert code == 2
    assert "unknown workload" in err
    assert "Traceback" not in err


def _inputs(batch_size: int, device: object) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(batch_size, 16, device=device), torch.randint(0, 4, (batch_size,), device=device)


def _failing_model() -> torch.nn.Module:
    raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_an_in_memory_workload_is_measured_in_a_forked_child() -> None:
    # Run a parallel op here first: the forked child must not hang on OpenMP's lost threads.
    torch.randn(256, 256) @ torch.randn(256, 256)
    workload = Workload(
        name="in-memory", model_factory=lambda: torch.nn.Linear(16, 4), input_factory=_inputs, batch_size=8
    )
    measurement = run_benchmark(workload, duration_s=1.5, timeout_s=60)
    assert measurement.status == "ok", measurement.message
    assert measurement.samples_per_second is not None and measurement.samples_per_second.median > 0
    assert any("one CPU thread" in warning for warning in measurement.warnings)


def test_an_in_memory_workload_that_runs_out_of_memory_is_an_oom_result() -> None:
    workload = Workload(
        name="in-memory-oom", model_factory=_failing_model, input_factory=_inputs, batch_size=8
    )
    measurement = run_benchmark(workload, duration_s=1.5, timeout_s=60)
    assert measurement.status == "oom"
    assert "out of memory" in measurement.message
