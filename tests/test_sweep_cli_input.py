"""Bad input to `perdollar sweep`: one line naming the problem and the fix, exit 2, no traceback."""

from __future__ import annotations

import importlib.util
import shutil
import zipfile
from pathlib import Path

import pytest

from cli_runner import run_perdollar


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("--via", "slurm"), "--via 'slurm'"),
        (("--strategy", "random"), "--strategy 'random'"),
        (("--top", "0"), "--top 0"),
        (("--budget", "-5"), "--budget"),
        (("--confidence", "1.5"), "--confidence"),
        (("--via", "local", "--dry-run"), "--dry-run"),
        # Paths and URLs are checked before any work, not found missing on a node minutes later.
        (("--dry-run", "--workdir", "MISSING_DIR"), "--workdir MISSING_DIR does not exist"),
        (("--dry-run", "--workdir", __file__), "is a file, not a folder"),
        (("--dry-run", "--workdir", ".", "--requirements", "no-such.txt"), "--requirements no-such.txt"),
        (("--dry-run", "--remote-store", "notaurl"), "--remote-store 'notaurl' is not a database URL"),
        (("--dry-run", "--remote-store", "sqlite:///here.db"), "cloud nodes cannot write to"),
        (("--dry-run", "--out", ""), "--out is empty"),
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
    done = run_perdollar("sweep", "mlp", "--via", "skypilot", env={"PERDOLLAR_HOME": str(tmp_path)})
    assert done.returncode == 2 and "pip install skypilot" in done.stderr and "Traceback" not in done.stderr


def test_a_symbolic_link_under_out_is_refused_and_what_it_points_to_is_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], _isolated_home: Path
) -> None:
    from perdollar.cli import main

    elsewhere = tmp_path / "another-project"
    elsewhere.mkdir()
    (elsewhere / "perdollar-0.0.1-py3-none-any.whl").write_bytes(b"someone else's wheel")
    out = tmp_path / "out"
    out.mkdir()
    (out / "wheels").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SystemExit) as exit_info:
        main(["sweep", "mlp", "--dry-run", "--top", "1", "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in elsewhere.iterdir()) == ["perdollar-0.0.1-py3-none-any.whl"]
    assert (elsewhere / "perdollar-0.0.1-py3-none-any.whl").read_bytes() == b"someone else's wheel"


def test_the_wheel_for_the_nodes_is_built_outside_the_checkout(tmp_path: Path) -> None:
    from perdollar.launch.wheel import build_wheel, project_root

    root = project_root()
    assert root is not None
    # A copy of the checkout stands in for the user's, so that the test sees every file it gains.
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, checkout / name)
    shutil.copytree(
        root / "src", checkout / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    before = sorted(str(p.relative_to(checkout)) for p in checkout.rglob("*"))
    wheels = tmp_path / "out" / "wheels"
    wheels.mkdir(parents=True)
    (wheels / "perdollar-0.0.1-py3-none-any.whl").write_bytes(b"an earlier wheel")
    (wheels / "notes.txt").write_text("kept")
    wheel = build_wheel(checkout, wheels)
    assert sorted(str(p.relative_to(checkout)) for p in checkout.rglob("*")) == before
    assert sorted(p.name for p in wheels.iterdir()) == sorted([wheel.name, "notes.txt"])
    assert zipfile.ZipFile(wheel).getinfo("perdollar/cli/sweep_cmd.py").file_size > 0
