"""Every subcommand, given hostile text where it takes a name: one line and a documented exit code.

The commands are found in the command tree, so one added later is fuzzed too. Each argument gets
text a careless or hostile user could type (markup, control characters, a path that is a folder,
an empty string); the command must refuse it in one ``perdollar: error:`` line with exit 1, 2 or
3 (or run to a sane end), and never print a traceback.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from perdollar.cli import app, main

HOSTILE_TEXT = ["[/bold]no-such-thing[red]", "", "名前\u202e\x07", "../../etc/passwd", "a" * 5000, "{folder}"]
# Every command gets the first two texts; the slow set (``--slow``) gives it the others too.
FIRST_TEXTS = 2


def _leaf_commands() -> list[tuple[tuple[str, ...], list[str]]]:
    """(path, names of its positional arguments) for every command a user can run."""
    found: list[tuple[tuple[str, ...], list[str]]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", {})
        if path and (not subcommands or getattr(command, "invoke_without_command", False)):
            arguments = [p.name for p in getattr(command, "params", []) if p.param_type_name == "argument"]
            found.append((path, arguments))
        for name, sub in subcommands.items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


COMMANDS = _leaf_commands()


def test_the_table_holds_every_subcommand() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"profile", "bench", "predict", "validate", "recommend", "compare", "report", "check", "sweep",
            "export", "serve-bench", "catalog", "catalog show", "catalog refresh", "history",
            "history reevaluate"} <= names  # fmt: skip


def _invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


@pytest.mark.parametrize(
    "texts",
    [
        pytest.param(HOSTILE_TEXT[:FIRST_TEXTS], id="first-texts"),
        pytest.param(HOSTILE_TEXT[FIRST_TEXTS:], id="other-texts", marks=pytest.mark.slow),
    ],
)
@pytest.mark.parametrize(("path", "arguments"), COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_hostile_text_for_every_argument_is_one_line(
    path: tuple[str, ...],
    arguments: list[str],
    texts: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PERDOLLAR_STORE", f"sqlite:///{tmp_path / 'store.db'}")
    monkeypatch.setenv("COLUMNS", "300")
    for text in texts:
        value = text.format(folder=tmp_path)
        # A command without arguments gets the text where an argument would be: refused as extra.
        given = [value] * max(len(arguments), 1)
        code, out, err = _invoke([*path, *given], capsys)
        assert "Traceback" not in err + out, (path, value, err[-800:])
        if code == 0:
            continue  # taken as a name that matched nothing, say, and answered sanely
        errors = [line for line in err.strip().splitlines() if line.startswith("perdollar: error:")]
        assert code in (1, 2, 3), (path, value, code, err[-800:])
        assert len(errors) == 1, (path, value, err[-800:])


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_takes_verbose_after_its_name(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    # --verbose shows what a one-line error collapsed (a library's log, the exception chain behind it)
    code, out, err = _invoke([*path, "--verbose", "--help"], capsys)
    assert code == 0 and "--verbose" in out, err[-800:]


@pytest.mark.parametrize("command", ["check", "bench"])
@pytest.mark.parametrize("device", ["quantum", "[red]gpu", "cuda:x"])
def test_a_device_that_does_not_exist_is_a_usage_error_not_a_failed_run(
    command: str, device: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.setenv("PERDOLLAR_STORE", f"sqlite:///{tmp_path / 'store.db'}")
    code, out, err = _invoke([command, "mlp", "--device", device, "--duration", "1"], capsys)
    errors = [line for line in err.strip().splitlines() if line.startswith("perdollar: error:")]
    assert code == 2 and len(errors) == 1 and "unknown device" in errors[0], err[-800:]
    assert "ended" not in err and "Traceback" not in err and out == ""
