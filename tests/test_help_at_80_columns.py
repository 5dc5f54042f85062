"""``--help`` teaches at 80 columns: every option's name whole, no value shown for a flag, and the
language-model examples it gives answer as written."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

import click
import pytest
import typer

from cli_runner import run_perdollar
from perdollar import cli
from perdollar.cli import build_app, recommend_cmd


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*path, name))


COMMANDS = dict(_commands(typer.main.get_command(build_app())))


def _names_shown(help_text: str) -> set[str]:
    """The option names in the panels' first columns: ``--provider,--cloud`` is two of them."""
    shown: set[str] = set()
    for line in help_text.splitlines():
        if not line.startswith("│"):
            continue
        for cell in re.split(r"\s{2,}", line.strip("│ ")):
            if not cell.startswith(("-", "*")):
                break
            shown.update(name for name in cell.split(",") if name.startswith("-"))
    return shown


@pytest.mark.parametrize("path", list(COMMANDS), ids=lambda path: " ".join(path) or "perdollar")
def test_every_option_shows_its_whole_name_and_no_flag_shows_a_value(path: tuple[str, ...]) -> None:
    done = run_perdollar(*path, "--help", columns=80)
    assert done.returncode == 0, done.stderr[-2000:]
    shown = _names_shown(done.stdout)
    options = [p for p in COMMANDS[path].params if isinstance(p, click.Option) and not p.hidden]
    for option in options:
        for name in (*option.opts, *option.secondary_opts):
            assert name in shown, f"{' '.join(path)}: {name} is not shown whole"
    assert {"--help", "-h"} <= shown
    assert "<bool>" not in done.stdout
    assert all(len(line) <= 80 for line in done.stdout.splitlines())


def _language_model_examples(help_text: str) -> list[str]:
    lines = [line.strip() for line in help_text.splitlines()]
    return [line for line in lines if line.startswith("perdollar recommend llama-")]


@pytest.mark.parametrize("path", [(), ("recommend",)], ids=["perdollar", "recommend"])
def test_the_help_shows_language_model_examples(path: tuple[str, ...]) -> None:
    examples = _language_model_examples(run_perdollar(*path, "--help", columns=200).stdout)
    assert any("--inference" in e for e in examples) and any("--inference" not in e for e in examples)


EXAMPLES = sorted(
    {e for text in (cli.HELP, recommend_cmd.RECOMMEND_HELP) for e in _language_model_examples(text)}
)


@pytest.mark.parametrize("example", EXAMPLES)
def test_each_language_model_example_of_the_help_answers(example: str) -> None:
    done = run_perdollar(*shlex.split(example)[1:], "--no-store", "--json", columns=200)
    assert done.returncode == 0, done.stderr[-2000:]
