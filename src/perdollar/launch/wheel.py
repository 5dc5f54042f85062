"""perdollar for a remote node: a wheel built from the checkout this process runs from.

perdollar is not on the package index, so a node cannot ``pip install perdollar``; a sweep ships
the code it was launched with instead (the same version, the user's own changes included).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
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


# What a build of the checkout reads: its manifest, the files the manifest names, and the package.
_BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "README.md", "LICENSE", "NOTICE")


def build_wheel(root: Path, folder: Path) -> Path:
    """``pip wheel`` of the checkout, built in a temporary copy, into ``folder``; no network.

    setuptools writes ``build/`` and ``*.egg-info`` next to the sources it builds, so the checkout
    is copied first: the user's folder is left as it was. Only perdollar's own earlier wheels in
    ``folder`` are replaced, and never through a symbolic link.
    """
    if folder.is_symlink():
        raise PerdollarError(
            f"{folder} is a symbolic link: the wheel is not written through it",
            "remove the link, or give --out a new folder",
        )
    with tempfile.TemporaryDirectory(prefix="perdollar-wheel-") as scratch:
        source, built = Path(scratch) / "source", Path(scratch) / "wheels"
        source.mkdir()
        for name in _BUILD_FILES:
            if (root / name).is_file():
                shutil.copy2(root / name, source / name)
        shutil.copytree(
            root / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
        )
        command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                   "-w", str(built), str(source)]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=scratch)
        wheels = sorted(built.glob("perdollar-*.whl"))
        if done.returncode != 0 or not wheels:
            last = (done.stderr.strip().splitlines() or ["no wheel was written"])[-1]
            raise PerdollarError(
                f"cannot build a wheel of perdollar from {root}: {last}",
                "pass --install REQUIREMENT (a wheel path or a git URL) for the nodes instead",
            )
        folder.mkdir(parents=True, exist_ok=True)
        olds = sorted(folder.glob("perdollar-*.whl"))
        linked = [old for old in olds if old.is_symlink() or not old.is_file()]
        if linked:
            raise PerdollarError(
                f"{linked[0]} is not a plain file: it is neither replaced nor written through",
                "remove it, or give --out a new folder",
            )
        for old in olds:
            old.unlink()
        return Path(shutil.copy2(wheels[-1], folder / wheels[-1].name))


def remote_path(wheel: Path) -> str:
    return f"{REMOTE_FOLDER}/{wheel.name}"
