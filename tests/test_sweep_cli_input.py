"""Bad input to `perdollar sweep`: one line naming the problem and the fix, exit 2, no traceback."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest


def _perdollar(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "import sys; from perdollar.cli import main; main(sys.argv[1:])", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PERDOLLAR_HOME": str(home)},
    )


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--via", "slurm"), "--via 'slurm'"),
        (("--strategy", "random"), "--strategy 'random'"),
        (("--top", "0"), "--top 0"),
        (("--budget", "-5"), "--budget"),
        (("--confidence", "1.5"), "--confidence"),
        (("--via", "local", "--dry-run"), "--dry-run"),
    ],
)
def test_bad_options_are_one_line_errors(
    args: tuple[str, ...], needle: str, capsys: pytest.CaptureFixture[str], _isolated_home: Path
) -> None:
    from perdollar.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "mlp", *args])
    assert exit_info.value.code == 2
    stderr = capsys.readouterr().err
    assert needle in stderr and "Traceback" not in stderr
    assert not list(_isolated_home.glob("sweeps/*"))  # nothing was launched or written


@pytest.mark.skipif(importlib.util.find_spec("sky") is not None, reason="SkyPilot is installed here")
def test_skypilot_missing_is_reported_with_the_install_command(tmp_path: Path) -> None:
    done = _perdollar("sweep", "mlp", "--via", "skypilot", home=tmp_path)
    assert done.returncode == 2 and "pip install skypilot" in done.stderr and "Traceback" not in done.stderr
