"""Every numeric option of every command, fuzzed: nonsense is one line and exit 2, never a run.

The options are found in the command tree itself, so an option added later is fuzzed too. The
check happens while the command line is parsed, before any work, so each case takes
milliseconds; a few cheap commands also run end to end with generated in-range values.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import click
import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli_runner import run_perdollar
from perdollar.cli import app, main
from perdollar.cli.option_values import (
    ABOVE_ONE,
    NON_NEGATIVE,
    PROBABILITIES,
    check_value,
    numeric_options,
    text_options,
)
from perdollar.errors import PerdollarError

NONSENSE = ("nan", "NaN", "inf", "-inf", "1e999", "-1", "-0.5", "abc", "", "1,5", "١٢", "10 apples")
# Every option gets these; the slow set (``--slow``) gives it the rest of NONSENSE too.
FIRST_NONSENSE = ("nan", "inf", "-1", "abc")


def _options(
    kind: Callable[[click.Command], list[click.Parameter]],
) -> list[tuple[tuple[str, ...], str]]:
    root = typer.main.get_command(app)
    found: list[tuple[tuple[str, ...], str]] = []

    def walk(command: click.Command, path: tuple[str, ...]) -> None:
        found.extend((path, param.opts[0]) for param in kind(command))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return found


OPTIONS = _options(numeric_options)
TEXT_OPTIONS = _options(text_options)


def _allowed(option: str, value: float) -> bool:
    option = option.removeprefix("--")
    if not math.isfinite(value):
        return False
    if option in PROBABILITIES:
        return 0 < value < 1
    if option in ABOVE_ONE:
        return value > 1
    return value >= 0 if option in NON_NEGATIVE else value > 0


def _invoke(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(args)
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def test_the_fuzz_table_covers_every_command_that_takes_numbers() -> None:
    commands = {" ".join(path) for path, _ in OPTIONS}
    assert {
        "bench",
        "predict",
        "recommend",
        "compare",
        "sweep",
        "serve-bench",
        "catalog",
        "check",
    } <= commands
    assert len(OPTIONS) >= 60


@pytest.mark.parametrize(
    "values",
    [
        pytest.param(FIRST_NONSENSE, id="first-values"),
        pytest.param(
            tuple(v for v in NONSENSE if v not in FIRST_NONSENSE), id="other-values", marks=pytest.mark.slow
        ),
    ],
)
@pytest.mark.parametrize(("path", "option"), OPTIONS, ids=[f"{' '.join(p)} {o}" for p, o in OPTIONS])
def test_nonsense_for_any_numeric_option_is_one_line_and_exit_2(
    path: tuple[str, ...], option: str, values: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    for value in values:
        # The option first: it is parsed, and refused, before any argument is even looked at.
        code, out, err = _invoke([*path, option, value], capsys)
        lines = err.strip().splitlines()
        assert code == 2, (option, value, err[-500:])
        assert "Traceback" not in err and out == ""
        assert len(lines) == 1 and lines[0].startswith("perdollar: error:"), (option, value, err)


@pytest.mark.parametrize(
    ("path", "option"), TEXT_OPTIONS, ids=[f"{' '.join(p)} {o}" for p, o in TEXT_OPTIONS]
)
def test_an_empty_text_option_is_one_line_and_exit_2(
    path: tuple[str, ...], option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for value in ("", "  "):
        code, out, err = _invoke([*path, option, value], capsys)
        lines = err.strip().splitlines()
        assert code == 2, (option, value, err[-500:])
        assert "Traceback" not in err and out == ""
        assert len(lines) == 1 and f"{option} is empty" in lines[0], (option, value, err)


def test_the_empty_text_table_covers_the_options_users_name_things_with() -> None:
    covered = {(" ".join(path), option) for path, option in TEXT_OPTIONS}
    assert {("recommend", "--samples"), ("sweep", "--workdir"), ("sweep", "--remote-store"),
            ("predict", "--measurements"), ("sweep", "--out")} <= covered  # fmt: skip


_CHECKED_VALUES = dict(
    case=st.sampled_from(OPTIONS),
    value=st.floats(allow_nan=True, allow_infinity=True, width=64) | st.integers(-(10**6), 10**6).map(float),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_CHECKED_VALUES)
def test_the_check_accepts_exactly_the_values_its_kind_allows(
    case: tuple[tuple[str, ...], str], value: float
) -> None:
    _check_allows_exactly(case, value)


@pytest.mark.slow  # the slow set draws five times as many values
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**_CHECKED_VALUES)
def test_the_check_accepts_exactly_the_values_its_kind_allows_over_many_more(
    case: tuple[tuple[str, ...], str], value: float
) -> None:
    _check_allows_exactly(case, value)


def _check_allows_exactly(case: tuple[tuple[str, ...], str], value: float) -> None:
    _, option = case
    if _allowed(option, value):
        check_value(option, value)
    else:
        with pytest.raises(PerdollarError) as refused:
            check_value(option, value)
        assert option in refused.value.one_line() and "\n" not in refused.value.one_line()


@pytest.mark.parametrize(
    "args",
    [
        ("catalog", "--accelerator", "a10g", "--limit", "{n}", "--json"),
        ("catalog", "--min-accelerators", "{x}", "--limit", "3", "--json"),
        ("predict", "mlp", "--instance", "g5.xlarge", "--nodes", "{n}", "--json"),
    ],
)
def test_in_range_values_run_to_a_sane_result(args: tuple[str, ...]) -> None:
    for n, x in ((1, 0.0), (3, 4.0)):
        filled = [a.format(n=n, x=x) for a in args]
        done = run_perdollar(*filled, columns=120)
        assert done.returncode in (0, 3), done.stderr[-1000:]
        assert "Traceback" not in done.stderr
        if done.returncode == 0:
            assert done.stdout.strip().startswith(("{", "["))
