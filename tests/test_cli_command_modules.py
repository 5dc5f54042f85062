"""A run builds only the command it names; the table that says which module owns which command
must match what each module registers, or a command would be missing from its own run."""

from __future__ import annotations

import pytest
import typer

from cli_runner import modules_loaded_by, run_perdollar
from perdollar.cli import COMMAND_MODULES, build_app


def _top_level_commands(app: typer.Typer) -> set[str]:
    return set(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def test_the_whole_command_line_has_exactly_the_commands_of_the_table() -> None:
    assert _top_level_commands(build_app()) == set(COMMAND_MODULES)


@pytest.mark.parametrize("module", sorted(set(COMMAND_MODULES.values())))
def test_each_module_registers_exactly_the_commands_the_table_gives_it(module: str) -> None:
    owned = {command for command, owner in COMMAND_MODULES.items() if owner == module}
    for command in owned:
        assert _top_level_commands(build_app(command)) == owned


def test_a_run_imports_only_the_module_of_its_command() -> None:
    loaded = modules_loaded_by("--debug", "history", "--help")
    assert "perdollar.cli.store_cmd" in loaded
    for other in ("recommend_cmd", "bench_cmd", "sweep_cmd", "export_cmd", "catalog_cmd"):
        assert f"perdollar.cli.{other}" not in loaded


def test_an_unknown_command_is_still_answered_with_the_closest_name() -> None:
    done = run_perdollar("recomend", "vit-b16")
    assert done.returncode == 2
    assert "Did you mean 'recommend'?" in done.stderr
