"""perdollar's command line in a fresh interpreter, as a user runs it, for the tests."""

from __future__ import annotations

import json
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


_LOADED_MARK = "modules loaded: "


def modules_loaded_by(*args: str, timeout: float = 300) -> set[str]:
    """The modules ``perdollar ARGS`` had imported when it exited (it must exit 0)."""
    script = (
        "import atexit, json, sys\n"
        f"atexit.register(lambda: sys.stderr.write({_LOADED_MARK!r} + json.dumps(sorted(sys.modules))))\n"
        "from perdollar.cli import main\n"
        "main(sys.argv[1:])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stderr.rsplit(_LOADED_MARK, 1)[1]))
