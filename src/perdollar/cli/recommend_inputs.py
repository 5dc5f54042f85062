"""What ``recommend``, ``compare`` and ``sweep`` read from their options: the training question, the
target, measurement files and an optional local measurement."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from perdollar.ask import measurements_from_file
from perdollar.cli import common
from perdollar.cli.recommend_options import Goal, Shape, Target, Where, node_cap
from perdollar.errors import PerdollarError
from perdollar.measure.result import Measurement
from perdollar.question import BillSettings, DataSettings, LanguageModelSettings, Question, SpotSettings
from perdollar.vocabulary import Family


def target_samples(samples: str | None, epochs: float | None, dataset_size: str | None) -> float | None:
    from perdollar.amounts import data_size_bytes

    if data_size_bytes(dataset_size) is not None:  # a size in bytes prices moving the data, not epochs
        if epochs is not None:
            raise PerdollarError(
                f"--epochs needs --dataset-size in samples, got {dataset_size!r}",
                "give --samples N with a size in bytes, or --dataset-size in samples (1.28M) with --epochs",
            )
        dataset_size = None
    if samples and epochs is not None:
        raise PerdollarError("give --samples or --epochs, not both", "drop one of them")
    if samples:
        if dataset_size:  # a count of samples: an epoch's size, which only --epochs multiplies
            raise PerdollarError(
                f"--dataset-size {dataset_size} counts an epoch's samples, which only --epochs uses",
                "give --epochs E instead of --samples, or the data's size in bytes (--dataset-size 20TB"
                " --data-region REGION) to price moving it",
            )
        return common.parse_count(samples, "--samples")
    if epochs is not None:
        if not dataset_size:
            raise PerdollarError("--epochs needs --dataset-size", "add --dataset-size N (samples per epoch)")
        if epochs <= 0:
            raise PerdollarError(f"--epochs must be positive, got {epochs}", "give a positive number")
        return epochs * common.parse_count(dataset_size, "--dataset-size")
    if dataset_size:
        raise PerdollarError("--dataset-size needs --epochs", "add --epochs E")
    return None


def load_measurements(path: Path | None) -> list[Measurement]:
    return [] if path is None else measurements_from_file(path)


def measure_here(spec: Any, json_output: bool, store_url: str | None, store: bool) -> list[Any]:
    from perdollar.cli.persist import save_measurement
    from perdollar.measure import run_benchmark

    with common.progress(f"measuring {spec.name} on this machine", quiet=json_output):
        measurement = run_benchmark(spec, mode="cached-input", duration_s=20.0)
    save_measurement(measurement, store_url=store_url, enabled=store)
    if not measurement.ok:
        common.err_console.print(
            f"local measurement {measurement.status}: {measurement.message}; predicting from specs",
            highlight=False,
        )
    return [measurement]


def training_question(
    workload: str,
    target: Target,
    goal: Goal,
    where: Where,
    *,
    max_nodes: int,
    batch_size: int | None,
    max_accelerators: int | None = None,
    stacks: tuple[str, ...] = (),
    precision: str | None,
    spot: SpotSettings | None = None,
    data: DataSettings | None = None,
    top: int = 0,
    token_target: float | None = None,
    language_model: LanguageModelSettings | None = None,
    family: Family | None = None,
) -> Question:
    """The training question ``recommend`` and ``sweep`` both ask, from their shared options."""
    from perdollar.amounts import data_size_bytes
    from perdollar.workload.loader import canonical_spec

    deadline = target.deadline
    counted = target.dataset_size is not None and data_size_bytes(target.dataset_size) is None
    if token_target is not None and (target.epochs is not None or counted):
        given = "--epochs" if target.epochs is not None else f"--dataset-size {target.dataset_size}"
        raise PerdollarError(
            f"{given} would count the target in epochs, and --tokens already sets it",
            "drop --epochs (and a --dataset-size in samples); a size in bytes with --data-region stays",
        )
    return Question(
        workload_name=canonical_spec(workload),
        objective=goal.objective,
        target_samples=token_target or target_samples(target.samples, target.epochs, target.dataset_size),
        deadline_hours=common.parse_duration_hours(deadline, "--deadline") if deadline else None,
        budget_usd=goal.budget,
        weights=goal.weights,
        confidence=goal.confidence,
        market=where.market,
        clouds=tuple(where.clouds),
        regions=tuple(where.regions),
        max_nodes=max_nodes,
        max_accelerators=max_accelerators,
        stacks=stacks_given(stacks),
        batch_size=batch_size,
        precision=precision,
        spot=spot or SpotSettings(),
        data=_with_dataset_bytes(data or DataSettings(), target.dataset_size),
        top=top,
        language_model=language_model,
        family=family,
    )


def asked_training_question(
    workload: str,
    target: Target,
    shape: Shape,
    goal: Goal,
    where: Where,
    language_model: LanguageModelSettings,
    plan_flags: Any,
    *,
    spot: SpotSettings,
    data: DataSettings,
    bill: BillSettings | None = None,
    top: int = 0,
) -> Question:
    """The training question as ``recommend`` asks it from its options, and ``sweep`` the same: a
    language model's target in tokens and its plan settings, any other workload's in samples."""
    from dataclasses import replace

    from perdollar.ask.questions import family_of, language_model_settings

    family = family_of(workload)
    token_target, settings = language_model_settings(
        workload, language_model, plan_flags, tokens=target.tokens, samples=target.samples
    )
    question = training_question(
        workload, target, goal, where, max_nodes=node_cap(shape.max_nodes, shape.max_accelerators),
        batch_size=shape.batch_size,
        max_accelerators=shape.max_accelerators, stacks=shape.stacks,
        precision=shape.precision, spot=spot, data=data, top=top, token_target=token_target,
        language_model=settings, family=family,
    )  # fmt: skip
    return replace(question, bill=bill) if bill is not None else question


def stacks_given(typed: tuple[str, ...]) -> tuple[str, ...]:
    """``--stack`` as typed, repeated or with commas, in the catalog's names (``tpu`` → ``xla``)."""
    from perdollar.ask.policy import canonical_stack

    names = [part.strip() for text in typed for part in str(text).split(",")]
    return tuple(dict.fromkeys(canonical_stack(name) for name in names if name))


def _with_dataset_bytes(data: DataSettings, dataset_size: str | None) -> DataSettings:
    """The data settings with the dataset's size when ``--dataset-size`` was given in bytes."""
    from dataclasses import replace

    from perdollar.amounts import data_size_bytes

    size = data_size_bytes(dataset_size)
    return replace(data, dataset_bytes=size) if size is not None else data
