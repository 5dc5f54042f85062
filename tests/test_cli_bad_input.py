"""Bad input on the real command line: one line "perdollar: error: <problem> — <fix>", exit 2,
no traceback, and nothing measured or written before the mistake is reported."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import typer
import yaml

from cli_runner import run_perdollar
from perdollar.cli import app
from perdollar.cli.usage import USAGE_ERRORS, usage_error_line
from perdollar.errors import PerdollarError


def assert_one_line_error(done: subprocess.CompletedProcess[str], *expected: str, code: int = 2) -> str:
    assert done.returncode == code, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("perdollar: error: ") and " — " in lines[0]
    for text in expected:
        assert text in lines[0]
    return lines[0]


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    """A plain file, used as if it were a folder."""
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["history", "--limit", "abc"], ["--limit", "perdollar history --help"]),
        (["catalog", "--max-price", "cheap"], ["--max-price", "perdollar catalog --help"]),
        (["catalog", "--no-such-option"], ["--no-such-option"]),
        (["no-such-command"], ["no-such-command", "perdollar --help"]),
    ],
)
def test_malformed_options_are_one_line_errors(argv: list[str], expected: list[str]) -> None:
    assert_one_line_error(run_perdollar(*argv), *expected)


def test_the_option_parsers_errors_are_all_recognised() -> None:
    command = typer.main.get_command(app)
    with pytest.raises(USAGE_ERRORS) as caught:
        command.main(args=["history", "--limit", "abc"], prog_name="perdollar", standalone_mode=False)
    line = usage_error_line(caught.value)
    assert "--limit" in line and line.endswith("see `perdollar history --help`") and "\n" not in line


def test_an_unusable_store_is_reported_before_the_workload_is_loaded(tmp_path: Path, a_file: Path) -> None:
    marker = tmp_path / "loaded"
    workload_file = tmp_path / "marks.py"
    workload_file.write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('loaded')\n"
        "def build():\n    raise RuntimeError('never reached')\n"
    )
    done = run_perdollar("bench", f"{workload_file}:build", "--store", f"sqlite:///{a_file}/results.sqlite")
    assert_one_line_error(done, "cannot open the store", "not a folder")
    assert not marker.exists()
    assert a_file.read_text() == "not a folder\n"


def test_a_corrupt_store_is_left_untouched(tmp_path: Path) -> None:
    store = tmp_path / "corrupt.sqlite"
    store.write_bytes(b"\x00garbage" * 64)
    assert_one_line_error(
        run_perdollar("history", "--store", f"sqlite:///{store}"), "not a usable perdollar store"
    )
    assert store.read_bytes() == b"\x00garbage" * 64


def test_a_refused_database_connection_is_one_line() -> None:
    pytest.importorskip("psycopg")
    from perdollar.store import open_store

    with pytest.raises(PerdollarError) as caught:
        open_store("postgresql://nobody@127.0.0.1:1/perdollar")
    assert "cannot open the store" in caught.value.one_line()
    assert "\n" not in caught.value.one_line()


def test_export_out_in_an_unwritable_place(a_file: Path) -> None:
    done = run_perdollar("export", "g5.xlarge", "--format", "ec2", "--out", str(a_file / "x.json"))
    assert_one_line_error(done, "--out", "not a folder")


def test_export_names_every_format_it_writes() -> None:
    done = run_perdollar("export", "g5.xlarge", "--format", "torchrn")
    assert_one_line_error(done, "sagemaker, ec2, torchrun, skypilot", "did you mean torchrun?")


def test_sweep_dry_run_out_in_an_unwritable_place(a_file: Path) -> None:
    done = run_perdollar("sweep", "mlp", "--dry-run", "--out", str(a_file / "plan"), "--no-store")
    assert_one_line_error(done, "--out", "not a folder")


def test_report_into_an_unwritable_place_is_an_error(a_file: Path) -> None:
    from fixtures.store.samples import make_recommendation
    from perdollar.report.html import write_report

    with pytest.raises(PerdollarError, match="cannot write the report"):
        write_report(make_recommendation(), a_file / "report.html")


def test_serve_bench_names_an_unknown_workload_itself() -> None:
    line = assert_one_line_error(run_perdollar("serve-bench", "no-such-model"), "unknown workload")
    assert "server did not start" not in line


@pytest.mark.parametrize(
    ("content", "expected"),
    [(None, "is a folder"), ("[]", "holds no usable measurement"), ("{not json", "not valid JSON")],
)
def test_unusable_measurement_files(tmp_path: Path, content: str | None, expected: str) -> None:
    path = tmp_path
    if content is not None:
        path = tmp_path / "measured.json"
        path.write_text(content)
    done = run_perdollar(
        "compare", "mlp", "1x g5.xlarge", "1x g5.2xlarge", "--measurements", str(path), "--json"
    )
    assert_one_line_error(done, expected)
    assert done.stdout == ""


def test_export_documents_are_pure_while_their_notes_go_to_stderr() -> None:
    done = run_perdollar("export", "g5.xlarge", "--format", "ec2", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["format"] == "ec2"
    plain = run_perdollar("export", "g5.xlarge", "--format", "ec2")
    # Long strings (the AMI note) must not be wrapped at the terminal width.
    assert json.loads(plain.stdout)["format"] == "ec2" and "g5.xlarge" in plain.stderr
    as_yaml = run_perdollar("export", "g5.xlarge", "--format", "ec2", "--yaml")
    assert yaml.safe_load(as_yaml.stdout) == json.loads(plain.stdout)


@pytest.mark.parametrize("argv", [["bench", "mlp", "--no-store"], ["serve-bench", "mlp"]])
def test_a_misspelt_device_is_bad_input_not_a_failed_run(argv: list[str]) -> None:
    assert_one_line_error(run_perdollar(*argv, "--device", "tpu"), "unknown device 'tpu'")
