"""Bad files given where a CSV or JSON is expected: one line, exit 2, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _files(folder: Path) -> dict[str, Path]:
    (folder / "a-folder.csv").mkdir()
    (folder / "header-only.csv").write_text("a,b\n")
    (folder / "garbage.csv").write_bytes(b"\x00\x01\xff\xfe not a table\n")
    (folder / "empty.csv").write_text("")
    (folder / "bad.json").write_text("{not json")
    return {p.name: p for p in folder.iterdir()} | {"missing.csv": folder / "missing.csv"}


VALIDATE = ("validate", "{file}")
PREDICT = ("predict", "mlp", "--instance", "g5.xlarge", "--measurements", "{file}")
CASES = [
    (VALIDATE, name)
    for name in ("a-folder.csv", "header-only.csv", "garbage.csv", "empty.csv", "missing.csv")
]
CASES += [(PREDICT, name) for name in ("a-folder.csv", "garbage.csv", "bad.json")]


@pytest.mark.parametrize(("command", "name"), CASES, ids=[f"{c[0]}-{n}" for c, n in CASES])
def test_a_bad_file_is_one_line(command: tuple[str, ...], name: str, tmp_path: Path) -> None:
    path = _files(tmp_path)[name]
    args = [part.format(file=path) for part in command]
    done = subprocess.run(
        [sys.executable, "-c", "from perdollar.cli import main; main()", *args],
        capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert "Traceback" not in done.stderr and lines[-1].startswith("perdollar: error:") and len(lines) == 1
    assert path.name in lines[-1]
