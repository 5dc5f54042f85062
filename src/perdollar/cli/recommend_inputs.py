"""What ``recommend`` and ``compare`` read from their options: the target, the spot interruption
rate, measurement files and an optional local measurement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from perdollar.ask import measurements_from_file
from perdollar.cli import common
from perdollar.errors import PerdollarError
from perdollar.measure.result import Measurement
from perdollar.question import LanguageModelSettings, Question, SpotSettings


def target_samples(samples: str | None, epochs: float | None, dataset_size: str | None) -> float | None:
    if samples and epochs is not None:
        raise PerdollarError("give --samples or --epochs, not both", "drop one of them")
    if samples:
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


def interruption_rate_from_text(text: str | None) -> float | None:
    if text is None:
        return None
    from perdollar.price.frame import monthly_fraction_from_text

    try:
        return monthly_fraction_from_text(text)
    except ValueError:
        raise PerdollarError(
            f"--interruption-rate {text!r} is not a monthly fraction",
            "write it like 10% or 0.1 (share of instances interrupted per month)",
        ) from None


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


def language_model_settings(
    workload: str,
    *,
    tokens: str | None,
    samples: str | None,
    seq_len: int | None,
    micro_batch: int | None,
    global_batch: int | None,
    plan: str | None,
    activation_checkpointing: bool,
    tensor_parallel: int | None,
    pipeline_parallel: int | None,
    finetune: str | None,
    lora_rank: int | None,
    attention_kernel: str | None = None,
    framework: str | None = None,
) -> tuple[float | None, LanguageModelSettings | None]:
    """A language model's target in tokens and its settings; (None, None) for other workloads."""
    from perdollar.workload.llm import looks_like_llm, near_language_model

    plan_flags = {
        "--activation-checkpointing": activation_checkpointing or None,
        "--tensor-parallel": tensor_parallel,
        "--pipeline-parallel": pipeline_parallel,
    }
    given = [flag for flag, value in plan_flags.items() if value] + [
        flag
        for flag, value in (
            ("--tokens", tokens),
            ("--seq-len", seq_len),
            ("--micro-batch", micro_batch),
            ("--global-batch", global_batch),
            ("--plan", plan),
            ("--finetune", finetune),
            ("--lora-rank", lora_rank),
            ("--attention-kernel", attention_kernel),
            ("--framework", framework),
        )
        if value is not None
    ]
    if not looks_like_llm(workload):
        if given:
            near = near_language_model(workload)
            fix = f"did you mean {near!r}?" if near else (
                "give a language model (llama-3.1-8b, a config.json …) or drop them"
            )
            raise PerdollarError(
                f"{', '.join(given)} apply to language models only, and {workload!r} is not one",
                fix,
            )
        return None, None
    if samples:
        raise PerdollarError(
            "a language model's target is counted in tokens", f"write --tokens {samples} instead of --samples"
        )
    token = None
    if plan is not None:
        from perdollar.predict.llm import parse_plan

        fixed = parse_plan(plan)
        fixed = replace(
            fixed,
            activation_checkpointing=fixed.activation_checkpointing or activation_checkpointing,
            tensor_parallel=tensor_parallel or fixed.tensor_parallel,
            pipeline_parallel=pipeline_parallel or fixed.pipeline_parallel,
        )
        token = fixed.token()
    elif any(plan_flags.values()):
        flags = ", ".join(f for f, v in plan_flags.items() if v)
        raise PerdollarError(
            f"{flags} fix part of a plan, and the planner searches every plan unless one is given",
            "give the whole plan, e.g. --plan fsdp --tensor-parallel 2 (or drop them)",
        )
    target = common.parse_count(tokens, "--tokens") if tokens else None
    settings = LanguageModelSettings(
        seq_len=seq_len,
        micro_batch=micro_batch,
        global_batch=global_batch,
        finetune=finetune,
        lora_rank=lora_rank,
        attention_kernel=attention_kernel,
        framework=framework,
        plan=token,
    )
    return target, settings


def training_question(
    workload: str,
    *,
    samples: str | None,
    epochs: float | None,
    dataset_size: str | None,
    deadline: str | None,
    budget: float | None,
    objective: str,
    weights: str | None,
    confidence: float,
    market: str,
    clouds: Sequence[str],
    regions: Sequence[str],
    max_nodes: int,
    batch_size: int | None,
    precision: str | None,
    spot: SpotSettings | None = None,
    top: int = 0,
    token_target: float | None = None,
    language_model: LanguageModelSettings | None = None,
) -> Question:
    """The training question ``recommend`` and ``sweep`` both ask, from their shared options."""
    from perdollar.workload.loader import canonical_spec

    return Question(
        workload_name=canonical_spec(workload),
        objective=objective,
        target_samples=token_target or target_samples(samples, epochs, dataset_size),
        deadline_hours=common.parse_duration_hours(deadline, "--deadline") if deadline else None,
        budget_usd=budget,
        weights=weights,
        confidence=confidence,
        market=market,
        clouds=tuple(clouds),
        regions=tuple(regions),
        max_nodes=max_nodes,
        batch_size=batch_size,
        precision=precision,
        spot=spot or SpotSettings(),
        top=top,
        language_model=language_model,
    )
