"""perdollar for a remote node: a wheel built from the checkout this process runs from.

perdollar is not on the package index, so a node cannot ``pip install perdollar``; a sweep ships
the code it was launched with instead (the same version, the user's own changes included).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

from perdollar.errors import PerdollarError

# Where the wheel lands on a node (SkyPilot file mounts take a path under the home folder).
REMOTE_FOLDER = "~/.perdollar/wheels"


def project_root() -> Path | None:
    """The checkout holding the running package (``src/perdollar`` under a ``pyproject.toml``)."""
    root = Path(__file__).resolve().parents[3]
    manifest = root / "pyproject.toml"
    if not manifest.is_file():
        return None
    try:
        name = tomllib.loads(manifest.read_text(encoding="utf-8")).get("project", {}).get("name")
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if name == "perdollar" else None


def build_wheel(root: Path, folder: Path) -> Path:
    """``pip wheel`` of the checkout into ``folder``, without dependencies or network."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("perdollar-*.whl"):
        old.unlink()
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
               "-w", str(folder), str(root)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    wheels = sorted(folder.glob("perdollar-*.whl"))
    if done.returncode != 0 or not wheels:
        last = (done.stderr.strip().splitlines() or ["no wheel was written"])[-1]
        raise PerdollarError(
            f"cannot build a wheel of perdollar from {root}: {last}",
            "pass --install REQUIREMENT (a wheel path or a git URL) for the nodes instead",
        )
    return wheels[-1]


def remote_path(wheel: Path) -> str:
    return f"{REMOTE_FOLDER}/{wheel.name}"
