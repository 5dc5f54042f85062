"""A language model served on N GPUs of one accelerator: ``perdollar predict CONFIG --inference``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perdollar.errors import PerdollarError
from perdollar.predict.frame import SUPPORTED_STACKS
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file
from perdollar.workload.llm.census import checked

if TYPE_CHECKING:
    from perdollar.catalog.model import Accelerator
    from perdollar.predict.llm_serving.formats import ServingFormat
    from perdollar.predict.llm_serving.load import Workload


@dataclass(frozen=True)
class LanguageModelServingPrediction:
    """What the prediction was made for, and the prediction (``predict.llm_serving``'s result)."""

    architecture: DecoderArchitecture
    accelerator: str
    gpus: int
    replicas: int
    work: Any
    result: Any


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
) -> LanguageModelServingPrediction:
    """One replica shape of ``workload`` served on ``gpus`` of ``accelerator``, checked and predicted."""
    from perdollar import catalog as catalog_mod
    from perdollar.predict.llm_serving import GroupShape, Workload, serving_format
    from perdollar.predict.llm_serving.engines import predict_with_engine
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
    degree = tensor_parallel or max(gpus // pipeline_parallel, 1)
    group = degree * pipeline_parallel
    if gpus % group:
        raise PerdollarError(
            f"{gpus} GPUs do not divide into replicas of tensor parallel {degree} × pipeline parallel "
            f"{pipeline_parallel} = {group} GPUs",
            "make --gpus a multiple of --tensor-parallel × --pipeline-parallel",
        )
    fmt = serving_format(_TRAINING_PRECISIONS.get((precision or "fp16").lower(), precision or "fp16"))
    arch = load_architecture(workload)
    too_long = context_problem(arch, input_tokens, output_tokens)
    if too_long:
        raise PerdollarError(
            too_long, "lower --input-tokens/--output-tokens, or choose a longer-context model"
        )
    misshapen = serving_shape_problem(arch, GroupShape(degree, pipeline_parallel))
    if misshapen:
        raise PerdollarError(misshapen, "change --tensor-parallel/--pipeline-parallel (and --gpus)")
    chip = catalog_mod.load().accelerator(accelerator)
    if chip.software_stack not in SUPPORTED_STACKS:
        work = Workload(input_tokens, output_tokens)
        return _on_own_stack(arch, chip, fmt, work, degree, pipeline_parallel,
                             batch, gpus, group)  # fmt: skip
    work = Workload(input_tokens, output_tokens)
    shape = GroupShape(tensor_parallel=degree, pipeline_parallel=pipeline_parallel)
    result = predict_with_engine(arch, chip, fmt, work, shape=shape, batch=batch, engine=engine,
                                 kv_precision=kv_precision)  # fmt: skip
    return LanguageModelServingPrediction(arch, chip.key, gpus, gpus // group, work, result)


def _on_own_stack(arch: DecoderArchitecture, chip: Accelerator, fmt: ServingFormat, work: Workload,
                  degree: int,
                  pipeline_parallel: int, batch: int | None, gpus: int,
                  group: int) -> LanguageModelServingPrediction:  # fmt: skip
    """A non-GPU chip served through its own stack's record, or refused with the stack's reason."""
    from dataclasses import replace

    from perdollar.predict.accelerator_stacks import SERVING_STACKS, serving_degrees
    from perdollar.predict.llm_serving import GroupShape
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
    result = predict_llm_serving(arch, chip, engine.serving_format(fmt), work, shape=shape, batch=batch,
                                 efficiency=engine.step_efficiency())  # fmt: skip
    result = replace(result, engine=engine.name, kv_precision="bf16")
    return LanguageModelServingPrediction(arch, chip.key, gpus, gpus // group, work, result)
