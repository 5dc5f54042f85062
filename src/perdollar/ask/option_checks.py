"""The checks of a question's options that build nothing themselves: a target counted from its
parts, one request rate under two names, a training target where a rate belongs, the serving
engine's features, a file of request lengths. :mod:`perdollar.ask.building` builds the question.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypedDict

from perdollar import amounts
from perdollar.ask.options import Serving, Shape, Target
from perdollar.errors import PerdollarError
from perdollar.question import DataSettings, LanguageModelSettings
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
        return amounts.count(samples, "--samples")
    if epochs is not None:
        if not dataset_size:
            raise PerdollarError("--epochs needs --dataset-size", "add --dataset-size N (samples per epoch)")
        if epochs <= 0:
            raise PerdollarError(f"--epochs must be positive, got {epochs}", "give a positive number")
        return epochs * amounts.count(dataset_size, "--dataset-size")
    if dataset_size:
        raise PerdollarError("--dataset-size needs --epochs", "add --epochs E")
    return None


def with_dataset_bytes(data: DataSettings, dataset_size: str | None) -> DataSettings:
    """The data settings with the dataset's size when ``--dataset-size`` was given in bytes."""
    from perdollar.amounts import data_size_bytes

    size = data_size_bytes(dataset_size)
    return replace(data, dataset_bytes=size) if size is not None else data


def with_one_rate(serving: Serving, family: str) -> Serving:
    """``serving`` with its request rate under the name its kind reads: ``--rps`` and ``--qps`` are
    one quantity, requests per second, so either serves a network or a language model."""
    if serving.rps is not None and serving.qps is not None and serving.rps != serving.qps:
        raise PerdollarError(
            f"--rps {serving.rps:g} and --qps {serving.qps:g} name one rate twice", "give one of them"
        )
    rate = serving.rps if serving.rps is not None else serving.qps
    if rate is None:
        return serving
    language_model = family == "language-model"
    return replace(serving, rps=rate if language_model else None, qps=None if language_model else rate)


def refuse_training_targets(target: Target, data: DataSettings, family: Family) -> None:
    """A serving question is sized by its rate: a training target given with it would be dropped."""
    given = (("--samples", target.samples), ("--epochs", target.epochs),
             ("--dataset-size", target.dataset_size), ("--tokens", target.tokens),
             ("--deadline", target.deadline))  # fmt: skip
    for flag, value in given:
        if value is not None:
            raise PerdollarError(
                f"{flag} is for training questions; a serving question is sized by its request rate",
                f"drop {flag} (--inference takes --rps or --qps), or drop --inference",
            )
    if family != "language-model" and data.data_region is not None:
        raise PerdollarError(
            "--data-region says where training data or a language model's weights are stored; serving a"
            " network moves neither",
            "drop --data-region",
        )


class EngineFeatures(TypedDict, total=False):
    """The serving-engine features of :class:`LanguageModelSettings`, as it takes them."""

    prefix_share: float | None
    speculative: str | None
    acceptance: float | None
    speculative_tokens: int | None
    disaggregate: str | None


def engine_features(settings: LanguageModelSettings | None) -> EngineFeatures:
    """The serving-engine features given (prefix caching, speculative decoding), checked now."""
    if settings is None:
        return {}
    from perdollar.predict.llm_serving.features import checked_prefix_share, speculation

    speculation(settings.speculative, settings.acceptance, settings.speculative_tokens)
    checked_prefix_share(settings.prefix_share)
    return {
        "prefix_share": settings.prefix_share,
        "speculative": settings.speculative,
        "acceptance": settings.acceptance,
        "speculative_tokens": settings.speculative_tokens,
        "disaggregate": settings.disaggregate,
    }


@dataclass(frozen=True)
class FileLengths:
    input_tokens: int | None
    output_tokens: int
    note: str


def request_lengths(
    path: Path | None, input_tokens: int | None, output_tokens: int | None
) -> FileLengths | None:
    """The mean lengths of the requests in ``--lengths-file`` (None without one)."""
    if path is None:
        return None
    if input_tokens is not None or output_tokens is not None:
        raise PerdollarError(
            "--lengths-file and --input-tokens/--output-tokens both give request lengths",
            "give one of them",
        )
    from perdollar.files import read_user_text
    from perdollar.workload.llm.load_curve import TRACE_MAX_BYTES
    from perdollar.workload.llm.request_lengths import parse_request_lengths

    # One row a request, as a trace has: the same bound.
    text = read_user_text(path, "--lengths-file", TRACE_MAX_BYTES, "give a CSV or JSON Lines file")
    try:
        lengths = parse_request_lengths(text)
    except PerdollarError as error:
        raise PerdollarError(f"--lengths-file {path}: {error.problem}", error.fix) from None
    return FileLengths(
        input_tokens=max(1, round(lengths.input.mean)) if lengths.input else None,
        output_tokens=max(1, round(lengths.output.mean)),
        note=lengths.describe(str(path)),
    )


def refuse_serving_options(serving: Serving) -> None:
    """A training question has no traffic over a day and no served model's latencies to keep."""
    given = (("--load-curve", serving.load_curve), ("--trace", serving.trace),
             ("--ttft-p99-ms", serving.ttft_p99_ms), ("--tpot-p99-ms", serving.tpot_p99_ms))  # fmt: skip
    for flag, value in given:
        if value is not None:
            raise PerdollarError(f"{flag} is for serving questions", f"add --inference, or drop {flag}")


def check_serving_comparison(serving: Serving, family: Family) -> None:
    """``compare --inference`` compares a language model's deployments at a rate."""
    if not serving.inference:
        raise PerdollarError("--rps and --tokens-per-day compare serving", "add --inference")
    if family != "language-model":
        raise PerdollarError(
            "compare --inference compares a language model's serving deployments",
            "name a language model (llama-3.1-8b …), or use recommend --inference for other networks",
        )


def check_fleet_traffic(serving: Serving, family: Family) -> None:
    """A load curve or a trace sizes a language model's fleet, and gives its rate by itself."""
    if family != "language-model":
        raise PerdollarError(
            "--load-curve and --trace size a language model's fleet", "drop them, or name a language model"
        )
    if serving.rps is not None or serving.tokens_per_day is not None:
        raise PerdollarError(
            "--rps/--tokens-per-day and a load curve or trace both give the rate", "give one of them"
        )


def refuse_training_limits(shape: Shape) -> None:
    """The chip cap and the stacks shape training clusters; a serving question sizes its own."""
    for flag, value in (("--max-accelerators", shape.max_accelerators), ("--stack", shape.stacks)):
        if value:
            raise PerdollarError(
                f"{flag} limits training candidates; a serving question sizes its deployments itself",
                f"drop {flag}, or drop --inference",
            )


def stacks_given(typed: tuple[str, ...]) -> tuple[str, ...]:
    """``--stack`` as typed, repeated or with commas, in the catalog's names (``tpu`` → ``xla``)."""
    from perdollar.ask.policy import canonical_stack

    names = [part.strip() for text in typed for part in str(text).split(",")]
    return tuple(dict.fromkeys(canonical_stack(name) for name in names if name))
