"""A command that loads a user's file and then profiles it starts one child process, not two.

The child that loads the file also traces it, and the parent finds that profile under the
fingerprint of its own Workload (the command's options applied). A trace that fails there still
fails where and as a trace in a child of its own would: at ``profile_workload``, as "profiling".
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from hostile_files import write_hostile
from perdollar import sandbox
from perdollar.errors import PerdollarError
from perdollar.profile import profiler
from perdollar.profile.profiler import load_to_profile, profile_workload
from perdollar.sandbox import UserCodeFailed
from perdollar.workload import after_loading, load_workload

# A config value that is not plain data crosses to the parent as its text: the fingerprint the
# parent computes from that text must still be the child's.
USER_FILE = """
import torch
from perdollar.workload import Workload

def build():
    return Workload(name="one-child", batch_size=16, precision="fp32",
                    config={"activation": torch.nn.ReLU(), "widths": (32, 64)},
                    model_factory=lambda: torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU()),
                    input_factory=lambda batch, device: torch.randn(batch, 32, device=device),
                    loss_fn=lambda out, batch: out.sum())
"""


@pytest.fixture
def child_starts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The target of every child process started from here on; no profile cached yet."""
    monkeypatch.setattr(profiler, "_CACHE", {})
    monkeypatch.setattr(after_loading, "_OUTCOMES", {})
    started: list[str] = []
    start = sandbox._run_child

    def counted(target: str, *args: Any, **kwargs: Any) -> Any:
        started.append(target)
        return start(target, *args, **kwargs)

    monkeypatch.setattr(sandbox, "_run_child", counted)
    return started


@pytest.fixture
def user_spec(tmp_path: Path) -> str:
    path = tmp_path / "one_child.py"
    path.write_text(textwrap.dedent(USER_FILE))
    return f"{path}:build"


def test_loading_to_profile_traces_in_the_loading_child(user_spec: str, child_starts: list[str]) -> None:
    workload = load_to_profile(user_spec, batch_size=3, precision="bf16", kind="inference")
    profile = profile_workload(workload)
    assert child_starts == ["perdollar.workload.after_loading:load_then"]
    assert (profile.batch_size, profile.precision, profile.kind) == (3, "bf16", "inference")
    assert profile.workload_fingerprint == workload.fingerprint


def test_a_plain_load_traces_nothing(user_spec: str, child_starts: list[str]) -> None:
    workload = load_workload(user_spec, batch_size=3)
    assert child_starts == ["perdollar.workload.stand_in:describe_file"]
    assert profile_workload(workload).batch_size == 3
    assert child_starts[1:] == ["perdollar.profile.profiler:profile_origin"]


def test_a_trace_that_raises_fails_at_profile_not_at_load(tmp_path: Path, child_starts: list[str]) -> None:
    spec, location = write_hostile(tmp_path, "step", "raise")
    workload = load_to_profile(spec)
    with pytest.raises(UserCodeFailed) as failed:
        profile_workload(workload)
    assert (failed.value.status, failed.value.where) == ("error", location)
    assert failed.value.what == f"profiling {spec}"
    assert "RuntimeError: hostile failure" in failed.value.reason
    assert len(child_starts) == 1


def test_a_trace_that_ends_the_process_fails_at_profile(tmp_path: Path, child_starts: list[str]) -> None:
    spec, _ = write_hostile(tmp_path, "step", "exit")
    workload = load_to_profile(spec)
    exited = r"^profiling .* failed \(error\): the process exited with code 3"
    with pytest.raises(UserCodeFailed, match=exited):
        profile_workload(workload)


def test_a_failed_import_still_fails_the_load(tmp_path: Path, child_starts: list[str]) -> None:
    spec, location = write_hostile(tmp_path, "import", "raise")
    with pytest.raises(UserCodeFailed) as failed:
        load_to_profile(spec)
    assert failed.value.what == f"loading {spec}" and failed.value.where == location


def test_an_invalid_option_is_a_usage_error_and_nothing_is_traced(
    user_spec: str, child_starts: list[str]
) -> None:
    with pytest.raises(PerdollarError, match="unknown precision 'fp7'") as failed:
        load_to_profile(user_spec, precision="fp7")
    assert not isinstance(failed.value, UserCodeFailed)
    assert after_loading._OUTCOMES == {} and child_starts == ["perdollar.workload.after_loading:load_then"]


def test_a_trace_that_hangs_times_out_as_profiling(tmp_path: Path, child_starts: list[str]) -> None:
    spec, _ = write_hostile(tmp_path, "step", "sleep")
    # One timeout covers the child's loading (torch's import) and its trace: 8 s leaves a busy
    # machine's import time out of what is tested, the hanging step.
    workload = load_to_profile(spec, timeout_s=8)
    with pytest.raises(UserCodeFailed, match=r"^profiling .* failed \(timeout\): no result within the 8 s"):
        profile_workload(workload)
