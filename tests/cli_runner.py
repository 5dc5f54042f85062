"""perdollar's command line in a fresh interpreter, as a user runs it, for the tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_perdollar(*args: str, store: Path | None = None, cwd: Path | None = None, timeout: float = 300,
                  columns: int = 300) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``perdollar ARGS`` with its output captured; ``store``: a SQLite file for PERDOLLAR_STORE."""
    env = {**os.environ, "COLUMNS": str(columns)}
    if store is not None:
        env["PERDOLLAR_STORE"] = f"sqlite:///{store}"
    return subprocess.run(
        [sys.executable, "-c", "from perdollar.cli import main; main()", *args],
        capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
    )  # fmt: skip
