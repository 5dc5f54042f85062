"""Names from workload files print as themselves; output files never silently replace the user's files."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_runner import run_perdollar
from hostile_files import write_hostile

MARKUP_NAME = "[/bold]evil[red]x"


@pytest.fixture(scope="module")
def markup_workload(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    folder = tmp_path_factory.mktemp("markup")
    spec, _ = write_hostile(folder, "never", "raise", name=MARKUP_NAME)
    store = folder / "s.db"
    done = run_perdollar("bench", spec, "--duration", "1", store=store, columns=400)
    assert done.returncode == 0, done.stderr[-1500:]
    return spec, store


@pytest.mark.parametrize(
    "command",
    [("profile", "{spec}"), ("predict", "{spec}", "--instance", "g5.xlarge"), ("history",),
     ("bench", "{spec}", "--inference", "--duration", "1")],
    ids=["profile", "predict", "history", "bench-inference"],
)  # fmt: skip
def test_a_name_made_of_markup_prints_literally(
    command: tuple[str, ...], markup_workload: tuple[str, Path]
) -> None:
    spec, store = markup_workload
    done = run_perdollar(*(part.format(spec=spec) for part in command), store=store, columns=400)
    assert done.returncode == 0, done.stderr[-1500:]
    assert "Traceback" not in done.stderr
    assert MARKUP_NAME in done.stdout


def _report(store: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_perdollar("report", "--last", "-o", str(out), *extra, store=store, columns=400)


def test_a_report_replaces_a_file_only_with_force(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    assert run_perdollar("recommend", "mlp", "--samples", "1e6", store=store, columns=400).returncode == 0
    nested = tmp_path / "new" / "folder" / "r.html"
    first = _report(store, nested)
    assert first.returncode == 0 and first.stdout.startswith("Wrote") and nested.is_file()
    # A report written earlier may be one the user keeps (edited, or of another question).
    nested.write_text(nested.read_text() + "<!-- my annotations -->")
    kept = nested.read_text()
    again = _report(store, nested)
    assert again.returncode == 2 and nested.read_text() == kept
    assert "already exists" in again.stderr and "--force" in again.stderr and "\n" not in again.stderr.strip()
    replaced = _report(store, nested, "--force")
    assert replaced.returncode == 0 and replaced.stdout.startswith("Replaced")
    assert "my annotations" not in nested.read_text()

    notes = tmp_path / "notes.txt"
    notes.write_text("my notes")
    refused = _report(store, notes)
    assert refused.returncode == 2 and notes.read_text() == "my notes"
    assert "not a perdollar report" in refused.stderr and "--force" in refused.stderr
    refused_early = run_perdollar(
        "recommend", "mlp", "--samples", "1e6", "--report", str(notes), store=store, columns=400
    )
    assert refused_early.returncode == 2 and notes.read_text() == "my notes"
    forced = _report(store, notes, "--force")
    assert forced.returncode == 0 and notes.read_text().startswith("<!DOCTYPE html>")


def test_a_malformed_aws_region_is_one_line_before_any_client(tmp_path: Path) -> None:
    done = run_perdollar("catalog", "refresh", "--source", "aws-api", "--region", "bad region!",
                         store=tmp_path / "s.db", columns=400)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        line for line in done.stderr.strip().splitlines() if line.startswith("perdollar: error:")
    ]
    assert "'bad region!' is not an AWS region name" in done.stderr
