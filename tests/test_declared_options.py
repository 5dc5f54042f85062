"""Every option declared on a settings dataclass is whole (a default, a help, typed choices), and a
flag reads the same on every command that takes it."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import typing
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import typer

import perdollar.cli
from cli_runner import run_perdollar
from perdollar.question import Declared

# Flags that name different things on different commands, each with why; every other flag has one
# help wherever it appears. The list is exact: a flag that stops differing must leave it.
MEANS_DIFFERENT_THINGS = {
    "--accelerator": "catalog filters by chip, predict and serve-bench name the one a run is on",
    "--budget": "recommend caps the job's cost, sweep the benchmarks' (the job's is --job-budget)",
    "--cloud": "catalog refresh names the price providers to fetch, not offers to keep",
    "--concurrency": "bench lists levels to measure, predict one level to predict at",
    "--confidence": "recommend's deadline probability; sweep's stopping rule (--deadline-confidence)",
    "--device": "bench, check and serve-bench run on devices of their own kinds",
    "--duration": "bench and check time one measurement, sweep one job",
    "--engine": "recommend and compare choose engines, serve-bench names the one behind --url",
    "--force": "export and report each replace their own output file",
    "--global-batch": "export writes it into a launch script, recommend plans with it",
    "--gpus": "predict sizes a deployment, serve-bench names an endpoint's",
    "--inference": "each command's serving variant: a ranking, a profile, a latency curve, a prediction",
    "--input-tokens": "recommend plans serving with it, serve-bench sends it",
    "--instance": "predict predicts on it, check judges a host against it",
    "--limit": "history and catalog list rows of their own",
    "--market": "catalog filters its listing by the two priced markets, recommend ranks every market",
    "--no-store": "history reevaluate reads its question from the store and only skips writing",
    "--nproc": "bench runs that many processes, check compares one with that many",
    "--out": "each command writes its own files",
    "--output-tokens": "recommend plans serving with it, serve-bench sends it",
    "--plan": "bench runs a plan, export writes it, recommend fixes it for the planner",
    "--region": "catalog quotas and catalog refresh read a cloud's API for these regions",
    "--rps": "predict predicts at it, recommend sizes a deployment for it",
    "--seq-len": "export writes it into a launch script, recommend plans with it",
    "--timeout": "bench and profile each bound their own child process",
    "--top": "recommend shows rows, profile lists operators, sweep measures candidates",
    "--workload": "history filters rows, export and report name a language model or a stored answer",
}
# The options shared by many commands: declared once, so none of them may differ anywhere.
SHARED = ("--json", "--csv", "--precision", "--batch-size", "--store", "--objective", "--measurements")


def _modules() -> list[Any]:
    names = ["perdollar.question", "perdollar.ask.options", "perdollar.ask.questions"]
    names += [f"perdollar.cli.{m.name}" for m in pkgutil.iter_modules(perdollar.cli.__path__)]
    return [importlib.import_module(name) for name in names]


def _declared_fields() -> list[tuple[type, dataclasses.Field[Any], Declared]]:
    found, seen = [], set()
    for module in _modules():
        for _, settings in inspect.getmembers(module, dataclasses.is_dataclass):
            if not isinstance(settings, type) or settings in seen:
                continue
            seen.add(settings)
            for item in dataclasses.fields(settings):
                option = item.metadata.get("option")
                if isinstance(option, Declared):
                    found.append((settings, item, option))
    return found


def test_every_declared_field_has_a_default_a_help_and_typed_choices() -> None:
    from perdollar.cli.declared import CHOICE_LISTS, choices_of

    fields = _declared_fields()
    assert len(fields) > 100  # every settings dataclass of the question and the commands was found
    for settings, item, option in fields:
        where = f"{settings.__name__}.{item.name} ({option.flag})"
        assert item.default is not dataclasses.MISSING or item.default_factory is not dataclasses.MISSING, (
            where
        )
        assert option.flag.startswith("--") and option.help.strip(), where
        choices = choices_of(typing.get_type_hints(settings)[item.name])
        if option.parse in CHOICE_LISTS:  # a comma list, each of its names a choice
            choices = choices_of(CHOICE_LISTS[option.parse])
        # Alternatives written "a | b | c" are choices: the field's type must list them.
        if " | " in option.help:
            assert choices, f"{where} lists choices in its help but is typed as plain text"
        if choices and item.default is not None:
            assert item.default in choices, where
    by_flag = {option.flag: choices_of(typing.get_type_hints(s)[i.name]) for s, i, option in fields}
    assert set(by_flag["--precision"]) >= {"fp32", "amp-bf16", "bf16", "fp8"}
    assert "carbon" in by_flag["--objective"]
    # recommend's --market is a comma list of markets; catalog's keeps offers of one priced market.
    markets = {
        choices_of(typing.get_type_hints(s)[i.name]): o.parse for s, i, o in fields if o.flag == "--market"
    }
    assert markets == {(): "markets", ("on-demand", "spot"): ""}
    assert set(choices_of(CHOICE_LISTS["markets"])) >= {"spot", "committed"}
    # The commands' own options are declared too, each fixed set of choices typed.
    assert by_flag["--kind"] == ("measurement", "recommendation")
    assert set(by_flag["--mode"]) == {"cached-input", "full", "data-only", "all"}
    assert by_flag["--source"] == ("gpuhunt", "aws-api") and "name" in by_flag["--sort"]
    for flag in ("--target-gpus", "--stale", "--max-run", "--connections", "--measure", "--captured-at"):
        assert flag in by_flag, flag


def test_the_listing_sorts_by_the_keys_the_catalog_query_sorts_by() -> None:
    from perdollar.catalog.query import SORT_KEYS
    from perdollar.vocabulary import ListingSort

    assert typing.get_args(ListingSort) == tuple(SORT_KEYS)


def _helps_by_flag() -> dict[str, set[str]]:
    from perdollar.cli import _format_help, build_app

    root = typer.main.get_command(build_app())
    _format_help(root)
    helps: dict[str, set[str]] = defaultdict(set)

    def walk(command: Any) -> None:
        for param in command.params:
            if getattr(param, "param_type_name", "") == "option":
                for flag in (*param.opts, *param.secondary_opts):
                    if flag.startswith("--") and flag not in ("--help", "--verbose"):
                        helps[flag].add(param.help or "")
        for sub in getattr(command, "commands", {}).values():
            walk(sub)

    walk(root)
    return helps


def test_no_two_commands_declare_the_same_flag_with_different_help() -> None:
    helps = _helps_by_flag()
    differing = {flag for flag, texts in helps.items() if len(texts) > 1}
    unexplained = sorted(differing - set(MEANS_DIFFERENT_THINGS))
    assert not unexplained, {flag: sorted(helps[flag]) for flag in unexplained}
    stale = sorted(set(MEANS_DIFFERENT_THINGS) - differing)
    assert not stale, f"these flags read the same everywhere now: drop them from the list: {stale}"
    assert not set(SHARED) & set(MEANS_DIFFERENT_THINGS)
    assert all(flag in helps for flag in SHARED)


# Every command that takes --precision, with what else it needs to get as far as reading it.
TAKES_PRECISION = [
    ("profile", "mlp"),
    ("bench", "mlp"),
    ("check", "mlp"),
    ("serve-bench", "mlp"),
    ("predict", "mlp", "--instance", "g5.xlarge"),
    ("recommend", "vit-b16", "--samples", "1e9"),
    ("compare", "vit-b16", "1x g5.xlarge"),
    ("sweep", "vit-b16", "--samples", "1e9", "--dry-run"),
    ("export", "1x g5.xlarge", "--format", "ec2"),
]


@pytest.mark.parametrize("command", TAKES_PRECISION, ids=lambda c: c[0])
def test_a_precision_that_is_none_of_the_choices_is_refused_alike_by_every_command(
    command: tuple[str, ...], tmp_path: Path
) -> None:
    store = tmp_path / "store.db"
    done = run_perdollar(*command, "--precision", "bf61", store=store, cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-1500:]
    assert len(lines) == 1 and "unknown precision 'bf61' for --precision" in lines[0], lines
    assert "did you mean bf16?" in lines[0] and "fp8-rowwise" in lines[0]
    assert not store.exists() and list(tmp_path.iterdir()) == []  # nothing measured, stored or written


@pytest.mark.parametrize(
    "command", [("recommend", "vit-b16", "--samples", "1e9"), ("sweep", "vit-b16", "--samples", "1e9")]
)
def test_an_objective_that_is_none_of_the_choices_is_refused_with_the_nearest(
    command: tuple[str, ...],
) -> None:
    done = run_perdollar(*command, "--objective", "tme", "--no-store")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert "unknown objective 'tme'" in lines[0] and "did you mean time?" in lines[0]


def test_a_choice_is_read_whatever_its_case() -> None:
    done = run_perdollar("profile", "mlp", "--precision", "BF16", "--json")
    assert done.returncode == 0, done.stderr[-1500:]
    assert '"precision": "bf16"' in done.stdout


@pytest.mark.parametrize(
    "command",
    [("catalog", "show", "g5.xlarge", "--cloud", "aws", "--cloud", "gcp"),
     ("predict", "mlp", "--instance", "g5.xlarge", "--cloud", "aws", "--cloud", "gcp")],
)  # fmt: skip
def test_a_command_that_takes_one_cloud_refuses_two_rather_than_keeping_the_last(
    command: tuple[str, ...],
) -> None:
    done = run_perdollar(*command, "--no-store") if command[0] == "predict" else run_perdollar(*command)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert "--cloud is given 2 times, and this command takes one" in lines[0] and "aws, gcp" in lines[0]


def _throughputs(*args: str) -> list[float]:
    done = run_perdollar("compare", "mlp", "1x g5.xlarge", "1x g5.2xlarge", *args, "--json", "--no-store")
    assert done.returncode == 0, done.stderr[-1500:]
    return [row["samples_per_second"] for row in json.loads(done.stdout)["comparison"]["estimates"]]


def test_the_batch_size_answers_to_its_short_and_long_names_on_every_command() -> None:
    # compare took only --batch-size: its -b and --batch are those of the one shared declaration.
    by_long = _throughputs("--batch-size", "4")
    assert _throughputs("-b", "4") == by_long == _throughputs("--batch", "4")
    assert by_long != _throughputs()  # the batch reached the prediction
    profiled = run_perdollar("profile", "mlp", "--batch", "4", "--json")
    assert profiled.returncode == 0 and '"batch_size": 4' in profiled.stdout, profiled.stderr[-800:]


def test_the_engines_a_choice_may_name_are_the_engines_perdollar_predicts() -> None:
    from perdollar.predict.llm_serving.engines import ANY_ENGINE, ENGINES, STACK_ENGINES
    from perdollar.vocabulary import ANY_ENGINE as ANY_IN_VOCABULARY
    from perdollar.vocabulary import ServingEngineName

    assert set(typing.get_args(ServingEngineName)) == set(ENGINES) | set(STACK_ENGINES)
    assert ANY_IN_VOCABULARY == ANY_ENGINE


@pytest.mark.parametrize(
    ("command", "named"),
    [(("recommend", "llama-3.1-8b", "--inference", "--rps", "5", "--engine", "vlm"), "vlm"),
     (("compare", "llama-3.1-8b", "--inference", "--rps", "5", "g6e.xlarge", "p5.48xlarge",
       "--engine", "vllm,trtllm,sglng"), "sglng")],
)  # fmt: skip
def test_an_engine_that_is_none_of_the_choices_is_refused_with_the_nearest(
    command: tuple[str, ...], named: str
) -> None:
    done = run_perdollar(*command, "--no-store")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert f"unknown serving engine {named!r} for --engine" in lines[0] and "did you mean" in lines[0]


@pytest.mark.parametrize(
    ("command", "flag", "near"),
    [(("catalog", "--sort", "prise"), "--sort", "price"),
     (("catalog", "--market", "spto"), "--market", "spot"),
     (("catalog", "refresh", "--source", "gpuhnt"), "--source", "gpuhunt"),
     (("bench", "mlp", "--mode", "ful", "--no-store"), "--mode", "full")],
)  # fmt: skip
def test_a_command_option_of_fixed_choices_is_refused_with_the_nearest(
    command: tuple[str, ...], flag: str, near: str
) -> None:
    done = run_perdollar(*command)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-1500:]
    assert f"for {flag}" in lines[0] and f"did you mean {near}?" in lines[0], lines[0]


def test_the_catalog_reads_its_market_whatever_its_case() -> None:
    done = run_perdollar("catalog", "--market", "Spot", "--limit", "3", "--json")
    assert done.returncode == 0, done.stderr[-1500:]
    rows = json.loads(done.stdout)
    assert rows and all(row["spot_price_per_hour"] is not None for row in rows)
