"""`export --out` writes a new file: it refuses to replace one without --force and never writes
through a symbolic link (a link in the folder cannot redirect the write elsewhere)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from cli_runner import run_perdollar
from perdollar.errors import PerdollarError
from perdollar.files import write_file_safely

EXPORT = ("export", "g5.xlarge", "--format", "ec2")


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    (line,) = [line for line in done.stderr.splitlines() if line.startswith("perdollar: error:")]
    return line


def test_an_existing_file_is_kept_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "ec2.json"
    target.write_text("my notes\n")
    refused = run_perdollar(*EXPORT, "--out", str(target), columns=200)
    assert "already exists" in _one_line_error(refused) and "--force" in refused.stderr
    assert target.read_text() == "my notes\n"
    forced = run_perdollar(*EXPORT, "--out", str(target), "--force", columns=200)
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert json.loads(target.read_text())  # replaced by the description


def test_a_symlink_out_of_the_folder_is_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "authorized_keys"
    victim.write_text("ssh-ed25519 AAAA keep-me\n")
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "ec2.json").symlink_to(victim)
    for extra in ([], ["--force"]):
        done = run_perdollar(*EXPORT, "--out", str(folder / "ec2.json"), *extra, columns=200)
        assert "symbolic link" in _one_line_error(done)
    assert victim.read_text() == "ssh-ed25519 AAAA keep-me\n"
    assert (folder / "ec2.json").is_symlink()


def test_a_new_file_is_written_and_no_partial_file_is_left(tmp_path: Path) -> None:
    target = tmp_path / "new" / "ec2.yaml"
    done = run_perdollar(*EXPORT, "--out", str(target), columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert isinstance(yaml.safe_load(target.read_text()), dict)
    assert sorted(p.name for p in target.parent.iterdir()) == ["ec2.yaml"]


def test_task_files_and_logs_are_never_written_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    link = tmp_path / "job.yaml"
    link.symlink_to(victim)
    with pytest.raises(PerdollarError, match="symbolic link"):
        write_file_safely(link, "name: job\n", overwrite=True)
    assert victim.read_text() == "untouched\n"
