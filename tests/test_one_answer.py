"""One answer for every question: options declared once, the family decided once, serving
estimates typed, and --csv writing the table each command names."""

from __future__ import annotations

import ast
import csv
import io
import json
from dataclasses import fields
from pathlib import Path

import click
import pytest
import typer.main

from cli_runner import run_perdollar
from perdollar.ask.answer import ROUTES
from perdollar.ask.questions import PlanFlags, decided, given_flags
from perdollar.cli import app
from perdollar.cli.declared import StoreChoice
from perdollar.goals import FleetGoal, ServingGoal, TrainingGoal
from perdollar.price.model import ServingFigures
from perdollar.question import Declared, LanguageModelSettings, Question, SpotSettings
from perdollar.store.codec import _estimate_from_payload

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "perdollar"


def _command(name: str) -> click.Command:
    commands: dict[str, click.Command] = getattr(typer.main.get_command(app), "commands", {})
    return commands[name]


def _options(name: str) -> dict[str, click.Parameter]:
    return {opt: p for p in _command(name).params for opt in getattr(p, "opts", [])}


def _declared(settings: type) -> list[tuple[str, Declared]]:
    return [
        (f.name, f.metadata["option"])
        for f in fields(settings)
        if isinstance(f.metadata.get("option"), Declared)
    ]


@pytest.mark.parametrize("settings", [LanguageModelSettings, SpotSettings, StoreChoice])
def test_recommend_takes_every_declared_setting_with_its_declared_help_and_unit(settings: type) -> None:
    options = _options("recommend")
    for _name, option in _declared(settings):
        flag = option.flag.split("/")[0]  # a switch "--on/--off" is one option under both names
        assert flag in options, option.flag
        assert options[flag].help == option.full_help
        if option.unit:
            assert options[flag].help.endswith(f"[{option.unit}]")


def test_each_command_takes_the_settings_that_mean_something_to_it() -> None:
    compare, predict = _options("compare"), _options("predict")
    declared = [(o.flag.split("/")[0], o.scope) for _, o in _declared(LanguageModelSettings)]
    training = [flag for flag, scope in declared if scope == "training"]
    serving = [flag for flag, scope in declared if scope.startswith("serving")]
    assert training and serving
    # compare ranks a shortlist for training and, with --inference, for serving: it takes both.
    assert all(flag in compare for flag in training) and all(flag in compare for flag in serving)
    # predict takes what one deployment needs (the SLOs belong to a ranking), and the store switch.
    assert "--input-tokens" in predict and "--ttft-p99-ms" not in predict
    assert "--no-store" in predict and "--cpu-offload" in predict and "--cpu-offload" not in compare
    # The same option is the same option on every command that takes it.
    for flag in ("--seq-len", "--plan", "--tensor-parallel", "--interruption-rate", "--no-store"):
        shared = [_options(c)[flag] for c in ("recommend", "compare", "predict") if flag in _options(c)]
        assert len(shared) >= 2 and len({p.help for p in shared}) == 1, flag


def test_given_flags_name_what_differs_from_the_defaults() -> None:
    assert given_flags(LanguageModelSettings()) == []
    assert given_flags(LanguageModelSettings(seq_len=4096, finetune="lora")) == ["--seq-len", "--finetune"]
    assert given_flags(PlanFlags(activation_checkpointing=True)) == ["--activation-checkpointing"]


def test_plan_flags_given_without_a_plan_are_refused_the_same_way_everywhere() -> None:
    recommend = ("recommend", "llama-3.1-8b", "--tokens", "1e9")
    for command in (recommend, ("compare", "llama-3.1-8b", "1x p5.48xlarge")):
        done = run_perdollar(*command, "--tensor-parallel", "2", "--no-store")
        assert done.returncode == 2, done.stderr[-2000:]
        assert "--tensor-parallel fix part of a plan" in done.stderr


def test_language_model_settings_on_a_network_name_the_flags_and_the_fix() -> None:
    done = run_perdollar("recommend", "vit-b16", "--samples", "1e9", "--seq-len", "128", "--no-store")
    assert done.returncode == 2
    assert "--seq-len apply to language models only" in done.stderr


def test_predict_with_no_store_never_opens_the_store() -> None:
    unreachable = "postgresql://nobody@127.0.0.1:1/none"
    args = ("predict", "vit-b16", "--instance", "g5.2xlarge", "--json", "--store", unreachable)
    reading = run_perdollar(*args)
    assert reading.returncode == 2 and "cannot open the store" in reading.stderr
    skipped = run_perdollar(*args, "--no-store")
    assert skipped.returncode == 0, skipped.stderr[-2000:]
    assert json.loads(skipped.stdout)["prediction"]["instance_type"] == "g5.2xlarge"


def test_the_family_is_decided_once_and_every_route_exists() -> None:
    assert decided(Question("llama-3.1-8b")).family == "language-model"
    assert decided(Question("llama-3.1-8b")).language_model == LanguageModelSettings()
    assert decided(Question("vit-b16")).family == "network"
    assert decided(Question("vit-b16", family="language-model")).family == "language-model"
    goals = (TrainingGoal, ServingGoal, FleetGoal)
    assert set(ROUTES) == {(family, goal) for family in ("network", "language-model") for goal in goals}


def test_only_the_question_builder_reads_the_family_from_a_name() -> None:
    readers = []
    for path in PACKAGE.rglob("*.py"):
        if path.parts[-3:-1] == ("workload", "llm") or path.name == "loader.py":
            continue  # where the name test is defined, and the workload loader that dispatches on it
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {getattr(n, "id", getattr(n, "name", "")) for n in ast.walk(tree)}
        if "looks_like_llm" in names:
            readers.append(path.relative_to(PACKAGE).as_posix())
    assert readers == ["ask/questions.py"]


def test_serving_figures_stored_as_a_loose_dictionary_read_back_typed() -> None:
    legacy = {
        "cloud": "aws", "instance_type": "g5.xlarge", "region": "us-east-1", "market": "on-demand",
        "nodes": 2,
        "accelerator": "A10G", "accelerators_per_node": 1.0, "samples_per_second": 200.0,
        "samples_per_second_low": 200.0, "samples_per_second_high": 200.0, "basis": "spec",
        "bottleneck": "compute", "price_per_hour": 2.0, "samples_per_dollar": 360000.0,
        "time_to_target_hours": None, "cost_to_target_usd": None, "expected_time_hours": None,
        "expected_cost_usd": None, "p_meet_deadline": None, "fits": True, "excluded_reason": "",
        "serving": {"qps": 200.0, "slo": "P99 ≤ 50 ms", "replicas": 2, "batch": 8, "p99_ms": 31.5,
                    "p99_ms_high": 40.0, "usd_per_million_requests": 2.78},
    }  # fmt: skip
    figures = _estimate_from_payload(legacy).serving
    assert figures == ServingFigures(
        requests_per_second=200.0, slo="P99 ≤ 50 ms", replicas=2, batch=8, latency_quantile=0.99,
        latency_ms=31.5, latency_high_ms=40.0, usd_per_million_requests=2.78,
    )  # fmt: skip


def test_csv_of_compare_is_the_comparison_and_of_history_its_entries(tmp_path: Path) -> None:
    configurations = ("4x g5.2xlarge spot", "1x g5.12xlarge on-demand")
    args = ("compare", "vit-b16", *configurations, "--samples", "1e9", "--no-store")
    document = json.loads(run_perdollar(*args, "--json").stdout)
    done = run_perdollar(*args, "--csv")
    assert done.returncode == 0, done.stderr[-2000:]
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [r["label"] for r in rows] == [e["label"] for e in document["comparison"]["estimates"]]
    store = tmp_path / "history.db"
    run_perdollar("recommend", "mlp", "--samples", "1e9", "--cloud", "aws", "--json", store=store)
    listed = list(csv.DictReader(io.StringIO(run_perdollar("history", "--csv", store=store).stdout)))
    assert len(listed) == 1 and listed[0]["kind"] == "recommendation"


def test_no_command_line_function_runs_past_eighty_lines() -> None:
    """The command line parses, asks and renders; work that grows longer belongs in ``ask``."""
    long = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.end_lineno and node.end_lineno - node.lineno >= 80:
                long.append(f"{path.name}:{node.name}")
    assert long == []


def test_chips_a_language_model_cannot_run_on_say_why_once_each() -> None:
    done = run_perdollar("recommend", "llama-3.1-8b", "--tokens", "2e10", "--no-store", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    excluded = [e for e in json.loads(done.stdout)["estimates"] if e["excluded_reason"]]
    stacks = {e["excluded_reason"] for e in excluded if "does not run on" in e["excluded_reason"]}
    # Chips their own stack does not train on (Inferentia, old TPUs) are out with that reason.
    assert any("Neuron" in s for s in stacks) and any("MaxText" in s for s in stacks)
    assert len({(e["accelerator"], e["excluded_reason"]) for e in excluded}) == len(excluded)


def test_a_chip_is_served_through_its_own_stack_or_refused_with_the_stacks_reason() -> None:
    question = ("predict", "llama-3.1-8b", "--inference", "--accelerator", "Inferentia2", "--input-tokens",
                "1000", "--output-tokens", "300")  # fmt: skip
    served = run_perdollar(*question)
    assert served.returncode == 0 and "nxd-inference" in served.stdout
    done = run_perdollar(*question, "--precision", "int4")
    assert done.returncode == 2 and "serves no int4" in done.stderr and "--accelerator H100" in done.stderr


def test_a_chip_alias_filters_the_catalog_as_its_name_does() -> None:
    from perdollar import catalog

    loaded = catalog.load()
    by_alias, by_name = loaded.accelerator_keys_matching("v5p"), loaded.accelerator_keys_matching("tpu-v5p")
    assert by_alias == by_name == {"TPU-v5p"}
