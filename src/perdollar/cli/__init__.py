"""The `perdollar` command line: a thin shell over the library.

Each command lives in its own module with a ``register(app)`` function; this module only
assembles them and turns :class:`~perdollar.errors.PerdollarError` into a one-line message
and an exit code.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
import traceback

import click
import typer

from perdollar.cli import common
from perdollar.cli.usage import USAGE_ERRORS, report_usage_error
from perdollar.errors import PerdollarError

HELP = """\
Which cloud machine should this deep-learning workload run on?

perdollar measures your workload, predicts it on every instance of AWS, GCP and Azure
(single and multi-node, on-demand and spot), prices each candidate honestly and ranks them
by your utility: samples per dollar, time under a budget, cost under a deadline, or
inference cost under a latency SLO.

  perdollar recommend vit-b16 --samples 1e9 --deadline 72h
  perdollar catalog --accelerator a10g --cloud aws
  perdollar profile resnet50
  perdollar bench mlp

Exit codes: 0 ok; 1 the workload ran and failed (recorded result); 2 bad input;
3 nothing satisfies the constraints.
"""

app = typer.Typer(
    name="perdollar",
    help=HELP,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="markdown",
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks instead of one-line errors."),
) -> None:
    common.STATE.debug = debug or bool(os.environ.get("PERDOLLAR_DEBUG"))


def _register_all() -> None:
    # Imported here so that a command module's import cost is paid once, at start-up, and
    # each module stays the single owner of its command's options.
    from perdollar.cli import (
        bench_cmd,
        catalog_cmd,
        inference_cmd,
        predict_cmd,
        profile_cmd,
        recommend_cmd,
        store_cmd,
        sweep_cmd,
    )

    for module in (
        catalog_cmd,
        profile_cmd,
        bench_cmd,
        predict_cmd,
        recommend_cmd,
        store_cmd,
        sweep_cmd,
        inference_cmd,
    ):
        module.register(app)


_register_all()


def _as_markdown(text: str) -> str:
    """Help texts are written as plain paragraphs with indented example lines; markdown would
    run the examples together, so each indented run becomes a code block of its own."""
    lines = inspect.cleandoc(text).splitlines()
    out: list[str] = []
    for line in lines:
        indented = line.startswith((" ", "\t")) and line.strip()
        if indented:
            if out and out[-1].strip() and not out[-1].startswith("    "):
                out.append("")
            out.append("    " + line.strip())
        else:
            if out and out[-1].startswith("    ") and line.strip():
                out.append("")
            out.append(line)
    return "\n".join(out)


def _format_help(command: click.Command) -> None:
    if command.help:
        command.help = _as_markdown(command.help)
    for sub in getattr(command, "commands", {}).values():
        _format_help(sub)


def main(argv: list[str] | None = None) -> None:
    command = typer.main.get_command(app)
    _format_help(command)
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Only perdollar's own --json: one after `--` belongs to the command being measured.
    own = arguments[: arguments.index("--")] if "--" in arguments else arguments
    keep_stdout = common.stdout_kept_for_json() if "--json" in own else contextlib.nullcontext()
    try:
        with keep_stdout:
            result = command.main(args=argv, prog_name="perdollar", standalone_mode=False)
    except PerdollarError as error:
        if common.STATE.debug:
            traceback.print_exc()
        common.print_error(error.one_line())
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, typer.Abort):
        common.print_error("interrupted")
        sys.exit(130)
    except USAGE_ERRORS as error:
        sys.exit(report_usage_error(error))
    except KeyboardInterrupt:
        common.print_error("interrupted")
        sys.exit(130)
    sys.exit(result if isinstance(result, int) else 0)
