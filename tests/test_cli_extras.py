"""The terminal's small promises: --version, completion, --csv wherever --json is, one example a line."""

from __future__ import annotations

import csv
import io
import json

import click
import pytest
import typer

import perdollar
from cli_runner import run_perdollar
from perdollar.cli import app, main


def _commands() -> dict[str, click.Command]:
    """Every command and subcommand by its full name, with the help formatting main() applies."""
    from perdollar.cli import _format_help

    root = typer.main.get_command(app)
    _format_help(root)
    found: dict[str, click.Command] = {}

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        found[" ".join(path)] = command
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return found


def test_version() -> None:
    done = run_perdollar("--version", columns=120)
    assert done.returncode == 0 and done.stdout.strip() == f"perdollar {perdollar.__version__}"


def test_shell_completion_completes_commands_and_options() -> None:
    script = run_perdollar("--show-completion", "bash", columns=120)
    assert script.returncode == 0 and "_perdollar_completion" in script.stdout
    words = {"_PERDOLLAR_COMPLETE": "complete_bash", "COMP_WORDS": "perdollar rec", "COMP_CWORD": "1"}
    assert run_perdollar(env=words, columns=120).stdout.split() == ["recommend"]
    words |= {"COMP_WORDS": "perdollar recommend vit-b16 --dead", "COMP_CWORD": "3"}
    assert run_perdollar(env=words, columns=120).stdout.split() == ["--deadline"]


def test_every_command_with_json_offers_csv() -> None:
    commands = _commands()
    with_json = [
        name for name, c in commands.items() if any("--json" in getattr(p, "opts", []) for p in c.params)
    ]
    assert len(with_json) >= 10
    for name in with_json:
        assert any("--csv" in getattr(p, "opts", []) for p in commands[name].params), name


def test_csv_holds_the_json_rows_in_the_same_order() -> None:
    args = ("recommend", "mlp", "--samples", "1e9", "--cloud", "aws", "--no-store")
    document = json.loads(run_perdollar(*args, "--json", columns=120).stdout)
    done = run_perdollar(*args, "--csv", columns=120)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [r["label"] for r in rows] == [e["label"] for e in document["estimates"]]
    assert float(rows[0]["price_per_hour"]) == pytest.approx(document["estimates"][0]["price_per_hour"])
    listed = run_perdollar("catalog", "--accelerator", "a10g", "--csv", columns=120)
    catalog = list(csv.DictReader(io.StringIO(listed.stdout)))
    assert catalog and all(row["accelerator_key"] == "A10G" for row in catalog)


def test_csv_and_json_together_is_one_line_error() -> None:
    done = run_perdollar("catalog", "--csv", "--json", columns=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().startswith("perdollar: error:") and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("name", sorted(n for n in _commands() if n))
def test_help_shows_one_example_per_line(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")
    with pytest.raises(SystemExit) as exited:
        main([*name.split(), "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    for line in text.splitlines():
        assert line.count("perdollar ") <= 1, f"{name}: examples run together: {line.strip()}"
