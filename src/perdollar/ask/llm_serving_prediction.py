"""A language model served on N GPUs of one accelerator: ``perdollar predict CONFIG --inference``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perdollar.errors import PerdollarError
from perdollar.predict.frame import SUPPORTED_STACKS
from perdollar.question import LanguageModelSettings
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file
from perdollar.workload.llm.census import checked

if TYPE_CHECKING:
    from perdollar.catalog.model import Accelerator
    from perdollar.predict.llm_serving.bands import Band
    from perdollar.predict.llm_serving.disaggregate import Disaggregation
    from perdollar.predict.llm_serving.formats import ServingFormat
    from perdollar.predict.llm_serving.load import LLMServingPrediction, RequestShape
    from perdollar.predict.llm_serving.offered_load import LoadFigures, OfferedLoad
    from perdollar.predict.llm_serving.shape import GroupShape
    from perdollar.predict.llm_serving.worth import FeatureWorth


@dataclass(frozen=True)
class LanguageModelServingPrediction:
    """What the prediction was made for, and the prediction (``predict.llm_serving``'s result)."""

    architecture: DecoderArchitecture
    accelerator: str
    gpus: int
    replicas: int
    work: RequestShape
    result: LLMServingPrediction
    worth: dict[str, FeatureWorth] = field(default_factory=dict)  # per feature: with it and without
    load: LoadFigures | None = None  # the figures at --concurrency/--rps, else None
    bands: dict[str, Band] = field(default_factory=dict)  # per figure: its held-out 80% band


BUNDLED_CONFIGS = Path(__file__).resolve().parents[1] / "workload" / "llm" / "configs"
# Training precisions the predict command also takes, as the serving format they mean.
_TRAINING_PRECISIONS = {"amp-bf16": "bf16", "amp-fp16": "fp16", "amp": "fp16"}


def _bundled(name: str) -> Path | None:
    candidate = BUNDLED_CONFIGS / f"{name.lower().removesuffix('.json')}.json"
    return candidate if candidate.is_file() else None


def load_architecture(workload: str) -> DecoderArchitecture:
    path = Path(workload)
    if not path.exists() and (bundled := _bundled(workload)) is not None:
        path = bundled
    name = path.parent.name if path.name == "config.json" else path.stem
    config = load_config_file(path)
    return checked(from_hf_config(config, name=name), config)


def predict_language_model_serving(
    workload: str,
    *,
    accelerator: str | None,
    gpus: int,
    tensor_parallel: int | None,
    pipeline_parallel: int,
    input_tokens: int | None,
    output_tokens: int | None,
    precision: str | None,
    batch: int | None,
    engine: str | None = None,
    kv_precision: str | None = None,
    expert_parallel: int | None = None,
    features: LanguageModelSettings | None = None,
    load: OfferedLoad | None = None,
) -> LanguageModelServingPrediction:
    """One replica shape of ``workload`` served on ``gpus`` of ``accelerator``, checked and predicted.

    ``features``: the serving-engine features asked for (prefix caching, speculative decoding,
    disaggregation); ``expert_parallel`` without ``tensor_parallel`` runs attention data parallel;
    ``load``: the requests in flight or the request rate to predict latencies at.
    """
    from perdollar import catalog as catalog_mod
    from perdollar.ask.llm_serving_at_load import refuse_a_second_load
    from perdollar.predict.llm_serving import GroupShape, RequestShape, serving_format
    from perdollar.predict.llm_serving.disaggregate import disaggregation
    from perdollar.predict.llm_serving.features import checked_prefix_share, checked_speculation, speculation
    from perdollar.predict.llm_serving.load import serving_shape_problem
    from perdollar.predict.parallel_limits import context_problem

    if not accelerator:
        raise PerdollarError(
            "--inference of a language model needs --accelerator", "add e.g. --accelerator H100 --gpus 1"
        )
    if input_tokens is None or output_tokens is None:
        raise PerdollarError(
            "--inference needs --input-tokens and --output-tokens",
            "add e.g. --input-tokens 1000 --output-tokens 300",
        )
    if input_tokens < 1 or output_tokens < 1:
        raise PerdollarError("--input-tokens and --output-tokens must be at least 1", "give token counts ≥ 1")
    settings = features or LanguageModelSettings()
    split = disaggregation(settings.disaggregate)
    refuse_a_second_load(load, batch, split)
    spec = speculation(settings.speculative, settings.acceptance, settings.speculative_tokens)
    prefix = checked_prefix_share(settings.prefix_share)
    default_degree = (
        1 if expert_parallel else max(gpus // pipeline_parallel // (split.replicas if split else 1), 1)
    )
    shape = GroupShape(tensor_parallel or default_degree, pipeline_parallel, expert_parallel or 1)
    degree, group = shape.tensor_parallel, shape.gpus
    unit = group * (split.replicas if split else 1)
    if gpus % unit:
        layout = f"tensor parallel {degree} × pipeline parallel {pipeline_parallel}"
        if shape.attention_data_parallel > 1:
            layout += f" × attention data parallel {shape.attention_data_parallel}"
        raise PerdollarError(
            f"{gpus} GPUs do not divide into replicas of {layout} = {group} GPUs"
            + (f", {split.replicas} of them for {split.label}" if split else ""),
            "make --gpus a multiple of --tensor-parallel × --pipeline-parallel (× --expert-parallel / "
            "--tensor-parallel, × the replicas of --disaggregate)",
        )
    arch = load_architecture(workload)
    # Without --precision the model is served as its checkpoint is published (gpt-oss in MXFP4,
    # DeepSeek-V3 in FP8), as an engine loads it; a 16-bit checkpoint in fp16.
    precision = precision or arch.checkpoint_format or "fp16"
    fmt = serving_format(_TRAINING_PRECISIONS.get(precision.lower(), precision))
    spec = checked_speculation(spec, arch)
    too_long = context_problem(arch, input_tokens, output_tokens)
    if too_long:
        raise PerdollarError(
            too_long, "lower --input-tokens/--output-tokens, or choose a longer-context model"
        )
    misshapen = serving_shape_problem(arch, shape)
    if misshapen:
        raise PerdollarError(
            misshapen, "change --tensor-parallel/--pipeline-parallel/--expert-parallel (and --gpus)"
        )
    chip = catalog_mod.load().accelerator(accelerator)
    work = RequestShape(input_tokens, output_tokens, prefix, spec)
    if chip.software_stack not in SUPPORTED_STACKS:
        _refuse_what_the_stack_cannot_honour(chip, engine, kv_precision, expert_parallel, split)
        if load is not None:
            raise PerdollarError(
                f"--concurrency and --rps are modelled for the GPU serving engines, not {chip.key}'s stack",
                "drop --concurrency/--rps (a max-load or --batch prediction still works), or choose a GPU",
            )
        return _on_own_stack(arch, chip, fmt, work, degree, pipeline_parallel,
                             batch, gpus, group, kv_precision)  # fmt: skip
    predicted = _predicted(arch, chip, fmt, work, shape, gpus, unit, split, batch, engine, kv_precision)
    if load is None:
        return predicted
    from perdollar.ask.llm_serving_at_load import at_load

    served, figures = at_load(
        arch, chip, fmt, work, shape, predicted.replicas, predicted.result, kv_precision, load
    )
    return replace(predicted, result=served, load=figures)


def _predicted(
    arch: DecoderArchitecture, chip: Accelerator, fmt: ServingFormat, work: RequestShape, shape: GroupShape,
    gpus: int, unit: int, split: Disaggregation | None,
    batch: int | None, engine: str | None, kv_precision: str | None,
) -> LanguageModelServingPrediction:  # fmt: skip
    """The prediction, disaggregated where asked, with what each feature in use is worth."""
    from perdollar.predict.llm_serving.disaggregate import predict_disaggregated
    from perdollar.predict.llm_serving.engines import predict_with_engine, serving_engine
    from perdollar.predict.llm_serving.worth import feature_worth

    def predict(asked: RequestShape, layout: GroupShape) -> LLMServingPrediction:
        return predict_with_engine(arch, chip, fmt, asked, shape=layout, batch=batch, engine=engine,
                                   kv_precision=kv_precision)  # fmt: skip

    result = predict(work, shape)
    if split is not None:
        if batch is not None:
            raise PerdollarError(
                "--disaggregate predicts the pools at full load, not a static --batch", "drop --batch"
            )
        chosen = serving_engine(result.engine)
        held = chosen.serving_format(fmt, kv_precision)
        pooled = predict_disaggregated(arch, chip, held, work, split, shape=shape, across_hosts=unit > 8,
                                       efficiency=chosen.step_efficiency())  # fmt: skip
        result = replace(pooled, engine=result.engine, kv_precision=result.kv_precision)
    worth = feature_worth(predict, work, shape, result)
    return with_bands(
        LanguageModelServingPrediction(arch, chip.key, gpus, gpus // unit, work, result, worth), chip
    )


def _refuse_what_the_stack_cannot_honour(
    chip: Accelerator, engine: str | None, kv_precision: str | None, expert_parallel: int | None,
    split: Disaggregation | None,
) -> None:  # fmt: skip
    """A non-GPU chip serves through its own stack's record: an engine, KV cache or layout that record
    does not model is refused in one line rather than replaced by the record's own."""
    from perdollar.predict.accelerator_stacks import SERVING_STACKS, serving_degrees, serving_kv_problem
    from perdollar.predict.llm_serving.engines import engine_chip_problem

    problem = engine_chip_problem(engine, chip)
    if problem:
        raise PerdollarError(problem, "give --engine one of those, or drop --engine")
    stack = SERVING_STACKS.get(chip.software_stack)
    if stack is None:
        return  # no record at all: the stack's own check below says so
    kv_problem = serving_kv_problem(stack, kv_precision)
    if kv_problem:
        raise PerdollarError(kv_problem, "drop --kv-precision, or choose a GPU (--accelerator H100)")
    if expert_parallel and expert_parallel > 1:
        degrees = ", ".join(map(str, serving_degrees(chip, 1 << 20)))
        raise PerdollarError(
            f"{stack.label} is modelled tensor parallel only on {chip.key} (a replica of {degrees} chips), "
            f"not expert parallel {expert_parallel}",
            "drop --expert-parallel (give --tensor-parallel instead), or choose a GPU (--accelerator H100)",
        )
    if split is not None:
        raise PerdollarError(
            f"{stack.label} is modelled with prefill and decode on the same replicas, not {split.label}",
            "drop --disaggregate, or choose a GPU (--accelerator H100)",
        )


def _on_own_stack(arch: DecoderArchitecture, chip: Accelerator, fmt: ServingFormat, work: RequestShape,
                  degree: int,
                  pipeline_parallel: int, batch: int | None, gpus: int,
                  group: int, kv_precision: str | None = None) -> LanguageModelServingPrediction:  # fmt: skip
    """A non-GPU chip served through its own stack's record, or refused with the stack's reason."""
    from perdollar.predict.accelerator_stacks import SERVING_STACKS, serving_degrees
    from perdollar.predict.llm_serving import GroupShape
    from perdollar.predict.llm_serving.formats import kv_precision_name
    from perdollar.predict.llm_serving.load import predict_llm_serving
    from perdollar.predict.nongpu_llm import serving_engine_for, serving_stack_problem

    problem = serving_stack_problem(chip, arch, fmt.name)
    if problem:
        raise PerdollarError(
            problem, "choose a model and format the stack serves, or a GPU (--accelerator H100)"
        )
    allowed = serving_degrees(chip, max(gpus, degree))
    if degree not in allowed:
        raise PerdollarError(
            f"a {chip.key} replica takes {', '.join(map(str, serving_degrees(chip, 1 << 20)))} chips under "
            f"its stack, not {degree}",
            "change --tensor-parallel (and --gpus)",
        )
    engine = serving_engine_for(SERVING_STACKS[chip.software_stack])
    shape = GroupShape(tensor_parallel=degree, pipeline_parallel=pipeline_parallel)
    held = engine.serving_format(fmt, kv_precision)
    result = predict_llm_serving(arch, chip, held, work, shape=shape, batch=batch,
                                 efficiency=engine.step_efficiency())  # fmt: skip
    result = replace(result, engine=engine.name, kv_precision=kv_precision_name(held))
    return with_bands(LanguageModelServingPrediction(arch, chip.key, gpus, gpus // group, work, result), chip)


def with_bands(
    prediction: LanguageModelServingPrediction, chip: Accelerator
) -> LanguageModelServingPrediction:
    """The prediction with each figure's band from the held-out error of predictions like it; the
    throughput's low and high are that band's."""
    from perdollar.predict.llm_serving.bands import serving_bands

    result = prediction.result
    bands = serving_bands(moe=prediction.architecture.is_moe, stack=chip.software_stack,
                          engine=result.engine, family=chip.architecture)  # fmt: skip
    low, high = bands["throughput"].around(result.output_tokens_per_second)
    result = replace(result, output_tokens_per_second_low=low, output_tokens_per_second_high=high)
    return replace(prediction, result=result, bands=bands)
