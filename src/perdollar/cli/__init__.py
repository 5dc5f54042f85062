"""The `perdollar` command line: a thin shell over the library.

Each command lives in its own module with a ``register(app)`` function; this module only
assembles them and turns :class:`~perdollar.errors.PerdollarError` into a one-line message
and an exit code.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import inspect
import os
import sys
import traceback
import warnings
from typing import TextIO

import click
import typer

from perdollar.cli import common
from perdollar.cli.help_layout import keep_option_names_whole
from perdollar.cli.option_values import harden
from perdollar.cli.plain_values import skip_needless_conversion
from perdollar.cli.usage import USAGE_ERRORS, report_usage_error
from perdollar.errors import PerdollarError, PerdollarWarning

HELP = """\
Which cloud machine should this deep-learning workload run on?

It measures your workload, predicts it on every instance of AWS, GCP, Azure and the GPU
clouds (Lambda, RunPod, Nebius, CoreWeave, Hyperstack, Vultr; single and multi-node, on-demand
and spot), prices each candidate honestly and ranks them by
your utility: samples per dollar, time under a budget, cost under a deadline, or
inference cost under a latency SLO.

  perdollar recommend vit-b16 --samples 1e9 --deadline 72h
  perdollar recommend llama-3.1-8b --tokens 1e10
  perdollar recommend llama-3.1-8b --inference --rps 5 --tpot-p99-ms 50
  perdollar catalog --accelerator a10g --cloud aws
  perdollar profile resnet50
  perdollar bench mlp

Exit codes: 0 ok; 1 the workload ran and failed (recorded result); 2 bad input;
3 nothing satisfies the constraints.
"""


def _new_app() -> typer.Typer:
    app = typer.Typer(
        name="perdollar",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode="markdown",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    return app


def _print_version(value: bool) -> None:
    if value:
        from perdollar import __version__

        typer.echo(f"perdollar {__version__}")
        raise typer.Exit()


def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks instead of one-line errors."),
    verbose: bool = typer.Option(False, "--verbose", help=common.VERBOSE_HELP, callback=common.set_verbose),
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print perdollar's version and exit."
    ),
) -> None:
    common.STATE.debug = debug or bool(os.environ.get("PERDOLLAR_DEBUG"))


# Each top-level command and the module that owns it (and its options), in the order they are
# registered. A run imports only the module of the command it names: the others' imports and option
# builds cost a warm answer a tenth of a second or more (tests/test_cli_command_modules.py keeps
# this table and the modules' register functions in step).
COMMAND_MODULES: dict[str, str] = {
    "catalog": "catalog_cmd",
    "profile": "profile_cmd",
    "bench": "bench_cmd",
    "predict": "predict_cmd",
    "validate": "predict_cmd",
    "recommend": "recommend_cmd",
    "compare": "recommend_cmd",
    "history": "store_cmd",
    "report": "store_cmd",
    "check": "store_cmd",
    "sweep": "sweep_cmd",
    "export": "export_cmd",
    "serve-bench": "network_serving_cmd",
}


def build_app(command: str | None = None) -> typer.Typer:
    """The command line with every command, or with only the module that owns ``command``."""
    app = _new_app()
    owner = COMMAND_MODULES.get(command or "")
    modules = [owner] if owner else list(dict.fromkeys(COMMAND_MODULES.values()))
    for module in modules:
        importlib.import_module(f"perdollar.cli.{module}").register(app)
    return app


@functools.cache
def _whole_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    # ``perdollar.cli.app`` (tests, embedding) is the whole command line, built on first use.
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _named_command(arguments: list[str]) -> str | None:
    """The command the arguments name (None: none yet, as with --help or --version alone)."""
    return next((a for a in arguments if not a.startswith("-")), None)


def _as_markdown(text: str) -> str:
    """Help texts are written as plain paragraphs with example lines (indented, or starting with
    ``perdollar``); markdown would run the examples together, so each run of them becomes a fenced
    code block of its own (fenced, not indented: typer dedents what follows the first paragraph)."""
    lines = inspect.cleandoc(text).splitlines()
    out: list[str] = []
    in_block = False
    for line in lines:
        example = bool(line.strip()) and line.startswith((" ", "\t", "perdollar "))
        if example and not in_block:
            if out and out[-1].strip():
                out.append("")
            out.append("```")
            in_block = True
        elif not example and in_block and line.strip():
            out += ["```", ""]
            in_block = False
        if in_block and not line.strip():
            continue  # a blank line inside a run of examples would end the code block
        out.append(line.strip() if example else line)
    if in_block:
        out.append("```")
    return "\n".join(out)


def _format_help(command: click.Command, verbose: click.Parameter | None = None) -> None:
    if command.help:
        command.help = _as_markdown(command.help)
    json_option = next((p for p in command.params if "--json" in getattr(p, "opts", [])), None)
    if json_option is not None and not any("--csv" in getattr(p, "opts", []) for p in command.params):
        # Read by main() before parsing (it asks for the JSON and writes its table as CSV), so the
        # option is shown in --help but never handed to the command itself. A copy of --json
        # keeps the option class typer parses with.
        csv_option = copy.copy(json_option)
        from perdollar.cli.declared import CSV

        csv_option.opts, csv_option.secondary_opts = [CSV.flag], []
        csv_option.name, csv_option.help, csv_option.expose_value = "csv", CSV.full_help, False
        command.params.append(csv_option)
    _without_flag_metavars(command)
    keep_option_names_whole(command)
    subcommands = getattr(command, "commands", {})
    verbose = verbose or next((p for p in command.params if "--verbose" in getattr(p, "opts", [])), None)
    if verbose is not None and not any("--verbose" in getattr(p, "opts", []) for p in command.params):
        # Every command takes --verbose after its name too, as `perdollar --verbose COMMAND` does
        # (a copy of the root's option: the option class typer parses with, never handed to the command).
        own = copy.copy(verbose)
        own.expose_value = False
        command.params.append(own)
    for sub in subcommands.values():
        _format_help(sub, verbose)


def _without_flag_metavars(command: click.Command) -> None:
    """A flag takes no value, so its help shows none (typer would show ``<bool>``, which reads as if
    ``--json true`` were how to give it). The help option is made when help is asked for: it gets
    the same on its way out."""
    for param in command.params:
        if getattr(param, "is_flag", False):
            param.metavar = ""
    make_help_option = command.get_help_option

    def help_option(context: click.Context) -> click.Option | None:
        option = make_help_option(context)
        if option is not None:
            option.metavar = ""
        return option

    # mypy checks a method replaced on one object against the class's unbound method, self and all.
    command.get_help_option = help_option  # type: ignore[method-assign, assignment]


def _chain(error: BaseException) -> list[str]:
    """The exceptions behind ``error`` (causes and contexts, even those hidden from the one line)."""
    lines, seen = [], {id(error)}
    inner = error.__cause__ or error.__context__
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        lines.append(f"  caused by {type(inner).__name__}: {inner}")
        inner = inner.__cause__ or inner.__context__
    return lines


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    if issubclass(category, PerdollarWarning):
        common.print_warning(str(message))  # one line, as our errors are
    else:
        _PYTHON_SHOW_WARNING(message, category, filename, lineno, file, line)


_PYTHON_SHOW_WARNING = warnings.showwarning


def main(argv: list[str] | None = None) -> None:
    warnings.showwarning = _show_warning
    common.fresh_consoles()
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Only perdollar's own --json: one after `--` belongs to the command being measured.
    own = arguments[: arguments.index("--")] if "--" in arguments else arguments
    # Newer typer builds it from its private copy of click, whose classes have click's interface.
    command: click.Command = typer.main.get_command(build_app(_named_command(own)))  # type: ignore[assignment]
    _format_help(command)
    skip_needless_conversion(command)  # before harden: its refusal of empty text wraps this
    harden(command)
    if "--csv" in own:
        if "--json" in own:
            common.print_error("--csv and --json both ask for the output on stdout — give one of them")
            sys.exit(2)
        at = own.index("--csv")
        arguments[at] = "--json"
        argv, own = arguments, arguments[: len(own)]
        common.STATE.csv = True
    keep_stdout = common.stdout_kept_for_json() if "--json" in own else contextlib.nullcontext()
    try:
        with keep_stdout, common.logs_held():
            result = command.main(args=argv, prog_name="perdollar", standalone_mode=False)
    except PerdollarError as error:
        if common.STATE.debug:
            traceback.print_exc()
        elif common.STATE.verbose:
            for line in _chain(error):
                sys.stderr.write(line + "\n")
        common.print_error(error.one_line() + common.held_note())
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, typer.Abort):
        common.print_error("interrupted")
        sys.exit(130)
    except USAGE_ERRORS as error:
        sys.exit(report_usage_error(error))
    except KeyboardInterrupt:
        common.print_error("interrupted")
        sys.exit(130)
    if common.held_note():
        common.print_warning("a library logged warnings while this ran" + common.held_note())
    sys.exit(result if isinstance(result, int) else 0)
