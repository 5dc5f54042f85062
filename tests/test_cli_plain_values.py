"""An option's value that skips typer's conversion is exactly what that conversion would make of it."""

from __future__ import annotations

import math
from typing import Any

import pytest
import typer

from cli_runner import modules_loaded_by, run_perdollar
from perdollar.cli import build_app
from perdollar.cli.plain_values import _UNCHANGED, _as_converted

CANDIDATES: tuple[Any, ...] = (
    None,
    (),
    [],
    "",
    "text",
    "3",
    "-1",
    0,
    1,
    -1,
    3,
    2.5,
    -0.5,
    1e9,
    math.nan,
    True,
)


def _every_option() -> list[tuple[Any, Any]]:
    group = typer.main.get_command(build_app())
    found, pending = [], [group]
    while pending:
        command = pending.pop()
        pending += list(getattr(command, "commands", {}).values())
        found += [(command, param) for param in command.params if hasattr(param, "type_descriptor")]
    return found


def _typer_converts(command: Any, param: Any, value: Any) -> tuple[bool, Any]:
    ctx = type(command).context_class(command)
    try:
        converted = param.get_runtime_param().coerce(value, param=param, ctx=ctx)
    except Exception:
        return False, None
    if param.required and param.value_is_missing(converted):
        return False, None
    return True, converted


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def test_every_skipped_conversion_gives_what_typer_gives() -> None:
    options = _every_option()
    assert len(options) > 100  # every command's options, not a few
    skipped = 0
    for command, param in options:
        for value in (*CANDIDATES, param.default):
            shortcut = _as_converted(param, value)
            if shortcut is _UNCHANGED:
                continue
            skipped += 1
            ok, converted = _typer_converts(command, param, value)
            assert ok, f"{command.name} {param.name}={value!r}: typer refuses it, the shortcut took it"
            assert _same(shortcut, converted), (
                f"{command.name} {param.name}={value!r}: {shortcut!r} ≠ {converted!r}"
            )
    assert skipped > 200  # the shortcut is taken, not only ever declined


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["recommend", "vit-b16", "--samples", "1e9", "--max-nodes", "0"], "--max-nodes"),
        (["recommend", "vit-b16", "--samples", ""], "--samples is empty"),
        (["recommend"], "Missing argument"),
    ],
)
def test_values_typer_or_perdollar_refuse_are_still_refused(arguments: list[str], message: str) -> None:
    done = run_perdollar(*arguments, "--no-store")
    assert done.returncode == 2, done.stderr
    assert message in done.stderr


def test_the_main_question_answers_without_building_typer_validators() -> None:
    loaded = modules_loaded_by(
        "recommend", "vit-b16", "--samples", "1e9", "--deadline", "72h", "--no-store", "--json"
    )
    assert "perdollar.cli.plain_values" in loaded
    assert "pydantic" not in loaded
