"""Published LLM serving figures as cases for the serving model: llama.cpp and TensorRT-LLM tables.

Each row of the development set's ``llamacpp_llama3_inference.csv`` and
``tensorrt_llm_inference.csv`` becomes a case with the setting its table states: batch-1 decode
(llama-bench ``tg N``: N tokens from an empty context), prompt processing (``pp N``), time to
first token at batch 1, static-batch throughput (gptSessionBenchmark) or in-flight batching at
maximum load (trtllm-bench). Multi-GPU llama.cpp rows split the layers (a pipeline that a single
sequence passes stage after stage); TensorRT-LLM rows state their tensor-parallel degree.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import ServingEfficiency, fit_start
from perdollar.predict.llm_serving.formats import ServingFormat, serving_format, unsupported_reason
from perdollar.predict.llm_serving.load import RequestShape, mixed_iteration, predict_llm_serving
from perdollar.predict.llm_serving.timing import GroupShape, decode_step_time, prefill_time
from perdollar.workload.llm.architecture import DecoderArchitecture, from_hf_config, load_config_file

FILES = ("llamacpp_llama3_inference.csv", "tensorrt_llm_inference.csv")
CONFIGS = Path(__file__).resolve().parents[2] / "workload" / "llm" / "configs"
# Models of the tables that perdollar bundles no config for: the sizes of their public configs.
_MORE_CONFIGS: dict[str, dict[str, str | int]] = {
    "mistral-7b": {"model_type": "mistral", "hidden_size": 4096, "num_hidden_layers": 32,
                   "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
                   "vocab_size": 32000},
    "gpt-j-6b": {"model_type": "gptj", "n_embd": 4096, "n_layer": 28, "n_head": 16, "vocab_size": 50400},
    "llama-7b": {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
                 "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000},
    "llama-2-70b": {"model_type": "llama", "hidden_size": 8192, "num_hidden_layers": 80,
                    "num_attention_heads": 64, "num_key_value_heads": 8, "intermediate_size": 28672,
                    "vocab_size": 32000},
    "falcon-180b": {"model_type": "falcon", "hidden_size": 14848, "num_hidden_layers": 80,
                    "num_attention_heads": 232, "num_kv_heads": 8, "vocab_size": 65024},
    "llama-3.1-405b": {"model_type": "llama", "hidden_size": 16384, "num_hidden_layers": 126,
                       "num_attention_heads": 128, "num_key_value_heads": 8, "intermediate_size": 53248,
                       "vocab_size": 128256},
}  # fmt: skip
_MODELS = {
    "Llama 3 8B": "llama-3.1-8b", "LLaMA v3.1 8B": "llama-3.1-8b", "Llama 3.1 8B": "llama-3.1-8b",
    "Llama 3 70B": "llama-3.1-70b", "LLaMA v3 70B": "llama-3.1-70b", "LLaMA v3.1 70B": "llama-3.1-70b",
    "Llama 3.3 70B": "llama-3.1-70b", "Mistral 7B": "mistral-7b", "GPT-J 6B": "gpt-j-6b",
    "LLaMA 7B": "llama-7b", "LLaMA 70B": "llama-2-70b", "Falcon 180B": "falcon-180b",
    "Llama 3.1 405B": "llama-3.1-405b",
}  # fmt: skip
# decode-step: one decode step of ``batch`` sequences at ``input_tokens`` of context (tokens/s);
# tpot: ms per output token of one request among ``batch`` running (continuous batching).
KINDS = ("max-throughput", "static-batch", "decode-batch-1", "decode-step", "prefill", "ttft", "tpot")
# The kinds whose figure is a time (ms, as predict_case returns it); every other kind is a rate.
TIME_KINDS = frozenset({"ttft", "tpot"})


@dataclass(frozen=True, slots=True)
class ServingCase:
    gpu: str  # accelerator key
    model: str
    arch: DecoderArchitecture
    fmt: ServingFormat
    shape: GroupShape
    kind: str  # one of KINDS
    input_tokens: int
    output_tokens: int
    batch: int | None
    measured: float  # tokens/s over all the row's GPUs, or ms for ttft
    engine: str  # llama.cpp | tensorrt-llm | vllm | sglang | tgi | hf
    max_batch: int = 2048  # the engine's cap on running sequences (trtllm-bench rows)
    source: str = ""  # the publication (or measurement file) the figure comes from


def _architecture(name: str) -> DecoderArchitecture:
    path = CONFIGS / f"{name}.json"
    config = load_config_file(path) if path.is_file() else _MORE_CONFIGS[name]
    return from_hf_config(config, name=name)


def _model_key(model: str) -> str | None:
    for prefix, key in sorted(_MODELS.items(), key=lambda kv: -len(kv[0])):
        if model.startswith(prefix):
            return key
    return None


def load_cases(development_csv: Path, catalog: Catalog) -> tuple[list[ServingCase], dict[str, int]]:
    """The LLM rows as cases, and how many rows were left out for which reason."""
    frame = pd.read_csv(development_csv)
    frame = frame[frame["file"].isin(FILES)]
    architectures: dict[str, DecoderArchitecture] = {}
    cases, left = [], {"flagged": 0, "unknown model": 0, "unknown gpu": 0, "unparsed": 0}
    for row in frame.itertuples(index=False):
        flag = str(row.flag) if isinstance(row.flag, str) else ""
        if flag.startswith(("anomalous", "suspect")):
            left["flagged"] += 1
            continue
        key = _model_key(str(row.model))
        if key is None:
            left["unknown model"] += 1
            continue
        try:
            chip = catalog.accelerator(str(row.gpu))
        except Exception:
            left["unknown gpu"] += 1
            continue
        arch = architectures.setdefault(key, _architecture(key))
        case = _case(row, chip, arch)
        if case is None:
            left["unparsed"] += 1
        else:
            cases.append(replace(case, source=str(row.source)))
    return cases, left


def _case(row: Any, chip: Accelerator, arch: DecoderArchitecture) -> ServingCase | None:
    # ``row``: a row of the published table as pandas reads it (its columns as attributes).
    count = int(row.gpu_count)
    text, unit = str(row.seq_len), str(row.unit)
    fmt = serving_format(str(row.precision))
    if str(row.file).startswith("llamacpp"):
        tokens = int(re.search(r"(\d+) tokens", text).group(1))  # type: ignore[union-attr]
        kind = "prefill" if "prompt" in unit else "decode-batch-1"
        # llama.cpp splits the layers over the GPUs: a pipeline one sequence walks through.
        shape = GroupShape(pipeline_parallel=count)
        measured = float(row.throughput)
        return ServingCase(
            chip.key, arch.name, arch, fmt, shape, kind, tokens, tokens, 1, measured, "llama.cpp"
        )
    lengths = re.search(r"in=(\d+),out=(\d+)", text)
    tp = re.search(r"TP=(\d+)", str(row.notes))
    if lengths is None:
        return None
    shape = GroupShape(tensor_parallel=int(tp.group(1)) if tp else count)
    prompt, output = int(lengths.group(1)), int(lengths.group(2))
    batch = None if pd.isna(row.batch_size) else int(row.batch_size)
    if "first token" in unit:
        measured = float(row.throughput)
        return ServingCase(
            chip.key, arch.name, arch, fmt, shape, "ttft", prompt, 1, 1, measured, "tensorrt-llm"
        )
    measured = float(row.throughput) * (count if "per GPU" in str(row.throughput_scope) else 1)
    kind = "static-batch" if "gptSession" in str(row.framework) else "max-throughput"
    if kind == "static-batch" and batch is None:
        return None
    return ServingCase(
        chip.key, arch.name, arch, fmt, shape, kind, prompt, output, batch, measured, "tensorrt-llm"
    )


def predict_case(case: ServingCase, chip: Accelerator, eff: ServingEfficiency) -> float | None:
    """The case's figure predicted in its own unit; None where the model says it cannot run."""
    if unsupported_reason(chip, case.fmt):
        return None
    if case.kind == "decode-batch-1":
        step = decode_step_time(case.arch, case.fmt, chip, case.shape, 1, case.output_tokens / 2, eff)
        return 1.0 / step.seconds
    if case.kind == "decode-step":
        batch = case.batch or 1
        step = decode_step_time(case.arch, case.fmt, chip, case.shape, batch, case.input_tokens, eff)
        return batch / step.seconds
    if case.kind in ("prefill", "ttft"):
        prompts = case.batch or 1
        seconds = prefill_time(
            case.arch, case.fmt, chip, case.shape, case.input_tokens, eff, sequences=prompts
        ).seconds
        return prompts * case.input_tokens / seconds if case.kind == "prefill" else seconds * 1e3
    work = RequestShape(case.input_tokens, case.output_tokens)
    if case.kind == "tpot":
        return _tpot_ms(case, chip, eff, work)
    if case.kind == "static-batch":
        # The table's batch ran, so it fitted: lift the model's own memory headroom.
        eff = replace(eff, memory_utilisation=1.0, reserve_gib=0.0)
        result = predict_llm_serving(
            case.arch, chip, case.fmt, work, shape=case.shape, batch=case.batch, efficiency=eff
        )
    else:
        eff = replace(eff, max_batch=case.max_batch, memory_utilisation=0.95)
        result = predict_llm_serving(case.arch, chip, case.fmt, work, shape=case.shape, efficiency=eff)
    return result.output_tokens_per_second if result.fits else None


def _tpot_ms(case: ServingCase, chip: Accelerator, eff: ServingEfficiency, work: RequestShape) -> float:
    """A request's time per output token with ``batch`` requests running: alone, a pure decode
    step; among others, a continuous-batching iteration that also carries their prompts."""
    running = case.batch or 1
    if running == 1:
        step = decode_step_time(case.arch, case.fmt, chip, case.shape, 1, work.mean_context, eff)
    else:
        step = mixed_iteration(case.arch, case.fmt, chip, case.shape, running, work, eff)
    return step.seconds * 1e3


PLAIN_ROOFLINE = ServingEfficiency(
    bandwidth=1.0, weight_only_bandwidth=1.0, compute=1.0, kv_bandwidth=1.0, step_overhead_s_per_layer=0.0,
    allreduce_latency_nvlink_s=0.0, allreduce_latency_pcie_s=0.0,
)  # fmt: skip
_GRIDS: dict[str, tuple[float, ...]] = {
    "bandwidth": tuple(0.5 + 0.025 * i for i in range(21)),  # up to the datasheet itself
    "weight_only_bandwidth": tuple(0.3 + 0.025 * i for i in range(27)),
    "compute": tuple(0.2 + 0.025 * i for i in range(29)),
    "kv_bandwidth": tuple(0.2 + 0.05 * i for i in range(17)),
    "step_overhead_s_per_layer": tuple(10e-6 * i for i in range(31)),
    # Host time a step: 0.1 ms steps up to 3 ms (CUDA-graph engines), then 1 ms steps (eager ones).
    "step_overhead_s": tuple(sorted({1e-4 * i for i in range(31)} | {1e-3 * i for i in range(4, 25)})),
    "allreduce_bandwidth": tuple(0.1 + 0.05 * i for i in range(19)),
    # Bytes in flight per SM-cycle, or no ceiling at all (an engine whose kernels reach the datasheet).
    "bytes_per_sm_cycle": (*(3.0 + 0.5 * i for i in range(19)), math.inf),
    # The fused-MoE kernels' floor per layer, 0 to 300 µs (a straightforward implementation's routing,
    # sort, gather and scatter kernels cost about 145 µs a layer on an H200: benchmarks/RESULTS.md).
    "moe_floor_s": tuple(10e-6 * i for i in range(31)),
    "expert_bandwidth": tuple(0.2 + 0.05 * i for i in range(17)),
    "expert_weight_only_bandwidth": tuple(0.2 + 0.05 * i for i in range(17)),
}
# Parameters only a mixture-of-experts model's rows depend on: a fit without such rows skips them.
MOE_PARAMETERS = frozenset(
    {"moe_floor_s", "expert_bandwidth", "expert_weight_only_bandwidth", "exchange_overlap"}
)


def errors(
    cases: Iterable[ServingCase], chips: Mapping[str, Accelerator], eff: ServingEfficiency
) -> list[float]:
    """Absolute relative error of each predicted case (cases the model cannot run are skipped)."""
    out = []
    for case in cases:
        predicted = predict_case(case, chips[case.gpu], eff)
        if predicted:
            out.append(abs(predicted / case.measured - 1.0))
    return out


def _log_error(cases: list[ServingCase], chips: Mapping[str, Accelerator], eff: ServingEfficiency) -> float:
    total, count = 0.0, 0
    for case in cases:
        predicted = predict_case(case, chips[case.gpu], eff)
        if predicted:
            total += abs(math.log(predicted / case.measured))
            count += 1
    return total / count if count else math.inf


def fit_efficiency(
    cases: list[ServingCase],
    chips: Mapping[str, Accelerator],
    start: ServingEfficiency,
    rounds: int = 3,
    fixed: frozenset[str] = frozenset({"step_overhead_s"}),
) -> ServingEfficiency:
    """Coordinate descent over a grid of each parameter not ``fixed`` (mean absolute log error)."""
    best = start
    if not any(case.arch.is_moe for case in cases):
        fixed = fixed | MOE_PARAMETERS
    for _ in range(rounds):
        # Each field is named at run time, so mypy checks its float against every field, the int ones too.
        for name, grid in _GRIDS.items():
            if name in fixed:
                continue
            current = _log_error(cases, chips, best)
            scored = [
                (_log_error(cases, chips, replace(best, **{name: value})), value)  # type: ignore[arg-type]
                for value in grid
            ]
            score, value = min(scored)
            if score < current - 1e-9:  # a parameter no row depends on keeps its starting value
                best = replace(best, **{name: value})  # type: ignore[arg-type]
    return best


def fit_engine(
    cases: list[ServingCase],
    chips: Mapping[str, Accelerator],
    start: ServingEfficiency,
    fixed: frozenset[str] = frozenset({"step_overhead_s"}),
) -> ServingEfficiency:
    """One engine's parameters: the shared ones fitted on its dense models' rows, then the
    mixture-of-experts ones alone on its MoE rows, so that what MoE layers cost cannot leak into
    the dense parameters; an engine with rows of one kind only fits every parameter on them."""
    dense = [case for case in cases if not case.arch.is_moe]
    moe = [case for case in cases if case.arch.is_moe]
    if not dense or not moe:
        return fit_efficiency(cases, chips, start, fixed=fixed)
    shared = fit_efficiency(dense, chips, start, fixed=fixed)
    return fit_efficiency(moe, chips, shared, fixed=fixed | (frozenset(_GRIDS) - MOE_PARAMETERS))


def held_out_errors(
    cases: list[ServingCase], chips: Mapping[str, Accelerator], targets: Iterable[str] | None = None
) -> dict[str, list[float]]:
    """Errors of each target GPU's cases (every GPU by default) under parameters fitted without it,
    on the other GPUs' cases of the same engine, by kind of case."""
    out: dict[str, list[float]] = {kind: [] for kind in KINDS}
    wanted = set(targets) if targets is not None else {case.gpu for case in cases}
    for engine in sorted({case.engine for case in cases}):
        rows = [case for case in cases if case.engine == engine]
        for gpu in sorted(wanted & {case.gpu for case in rows}):
            fitted = fit_efficiency([c for c in rows if c.gpu != gpu], chips, fit_start(engine))
            for kind in KINDS:
                out[kind] += errors([c for c in rows if c.gpu == gpu and c.kind == kind], chips, fitted)
    return out


def _summary(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"n": 0, "median_ape": None, "mean_ape": None, "within_10pct": None, "within_25pct": None}
    return {
        "n": len(values),
        "median_ape": statistics.median(values),
        "mean_ape": statistics.fmean(values),
        "within_10pct": sum(v <= 0.10 for v in values) / len(values),
        "within_25pct": sum(v <= 0.25 for v in values) / len(values),
    }


def validation_section(
    path: Path, catalog: Catalog, target_gpus: Iterable[str] | None
) -> dict[str, object] | None:
    """`perdollar validate`'s LLM serving section: held-out errors by kind beside the plain roofline;
    None when the file has no LLM serving rows."""
    try:
        cases, left = load_cases(path, catalog)
    except (KeyError, ValueError):
        return None
    if not cases:
        return None
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cases}}
    targets = None
    if target_gpus:
        targets = {catalog.accelerator(name).key for name in target_gpus}
        cases_scored = [case for case in cases if case.gpu in targets]
    else:
        cases_scored = cases
    held_out = held_out_errors(cases, chips, targets)
    return {
        "note": "LLM serving model; each target GPU predicted with parameters fitted without it",
        "rows": len(cases_scored),
        "left_out": left,
        "held_out": {kind: _summary(values) for kind, values in held_out.items()},
        "plain_roofline": {
            kind: _summary(errors([c for c in cases_scored if c.kind == kind], chips, PLAIN_ROOFLINE))
            for kind in KINDS
        },
    }
