"""With --json, stdout holds the JSON document alone: what a workload prints while it is imported
or built goes to stderr."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from cli_runner import run_perdollar, run_perdollar_process

NOISY = textwrap.dedent("""
    import os
    import sys

    import torch
    from perdollar.workload import Workload

    print("printed while importing")
    os.write(1, b"written to descriptor 1 while importing\\n")


    def _inputs(batch_size, device):
        return (torch.randn(batch_size, 8, device=device), torch.randint(0, 2, (batch_size,), device=device))


    def workload():
        print("printed while building")
        return Workload(name="noisy", model_factory=lambda: torch.nn.Linear(8, 2), input_factory=_inputs,
                        batch_size=4)
""")


@pytest.fixture
def noisy(tmp_path: Path) -> str:
    path = tmp_path / "noisy.py"
    path.write_text(NOISY, encoding="utf-8")
    return f"{path}:workload"


QUIET = {"OMP_NUM_THREADS": "1", "PERDOLLAR_METADATA_URL": "off"}


@pytest.mark.parametrize(
    "command",
    [
        ["bench", "--duration", "2", "--no-store"],
        ["recommend", "--samples", "1e9", "--no-store"],
    ],
)
def test_json_stdout_is_only_the_document(noisy: str, command: list[str]) -> None:
    # What a whole process writes to descriptor 1 is the subject: a fresh interpreter's stdout.
    done = run_perdollar_process(*command[:1], noisy, *command[1:], "--json", env=QUIET)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads(done.stdout)  # fails on any line printed before the document
    assert isinstance(document, dict)
    assert "printed while importing" in done.stderr and "written to descriptor 1" in done.stderr
    assert "printed while building" in done.stderr


def test_a_commands_own_json_flag_after_double_dash_is_not_perdollars(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("import sys\nfor _ in range(6):\n    print('9 samples/second', sys.argv[1:])\n")
    done = run_perdollar("bench", "--no-store", "--", sys.executable, str(script), "--json", env=QUIET)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "9.00 samples/s" in done.stdout  # the table, on stdout, as without --json
