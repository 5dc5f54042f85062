"""Serving figures of many engines as cases for the serving model, each with its source.

Two kinds of file: published figures of vLLM, SGLang, TGI and others
(benchmarks/published_llm_serving_engines.csv: one row a figure, with engine, version, GPU, tensor
parallel degree, precisions, request lengths and concurrency), and perdollar's own step timings
of plain transformers (benchmarks/gpu_llm_serving_steps_*.csv, the ``hf`` engine). Each case
keeps its source, so that a fit can leave a whole source out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.formats import serving_format, with_kv_precision
from perdollar.predict.llm_serving.published import ServingCase, _architecture, errors, fit_engine
from perdollar.predict.llm_serving.timing import GroupShape

# Serving rows name chips as their benchmark printed them; the catalog's keys for those.
_GPU_NAMES = {"NVIDIA H200": "H200-SXM-141GB", "NVIDIA H100 80GB HBM3": "H100-SXM5-80GB"}


def load_published_rows(path: Path, catalog: Catalog) -> list[ServingCase]:
    """The rows of the published engines file as cases (a row whose model or GPU is unknown is skipped)."""
    frame = pd.read_csv(path)
    cases = []
    for row in frame.itertuples(index=False):
        try:
            chip = catalog.accelerator(str(row.gpu))
            arch = _architecture(str(row.model))
        except Exception:
            continue
        fmt = with_kv_precision(serving_format(str(row.precision)), _text(row.kv_precision))
        prompt = int(row.input_tokens) if not pd.isna(row.input_tokens) else 0
        output = int(row.output_tokens) if not pd.isna(row.output_tokens) else 1
        concurrency = int(row.concurrency) if not pd.isna(row.concurrency) else None
        kind, measured = _kind(str(row.metric), float(row.value))
        shape = _layout(row)
        cases.append(ServingCase(chip.key, arch.name, arch, fmt, shape, kind, prompt, output, concurrency,
                                 measured, str(row.engine), source=str(row.source_url)))  # fmt: skip
    return cases


def _layout(row: object) -> GroupShape:
    """The row's layout. SGLang's --tp counts every rank: with data-parallel attention over D
    groups each attention group is tp / D ranks, and the experts are sliced over all of them
    unless expert parallelism holds them whole."""
    ranks = int(row.tensor_parallel)  # type: ignore[attr-defined]
    experts = _whole(getattr(row, "expert_parallel", None))
    groups = _whole(getattr(row, "attention_data_parallel", None))
    if groups > 1:
        return GroupShape(
            tensor_parallel=ranks // groups, expert_parallel=experts, data_parallel_attention=groups
        )
    return GroupShape(tensor_parallel=ranks, expert_parallel=experts)


def _whole(value: object) -> int:
    return 1 if value is None or (isinstance(value, float) and pd.isna(value)) else int(value)  # type: ignore[call-overload]


def _text(value: object) -> str | None:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _kind(metric: str, value: float) -> tuple[str, float]:
    if metric == "decode_tokens_per_s":  # one request's decode rate: the inverse of its TPOT
        return "tpot", 1e3 / value
    kinds = {"tpot_ms": "tpot", "ttft_ms": "ttft", "output_tokens_per_s": "max-throughput"}
    return kinds[metric], value


def load_hf_steps(paths: Iterable[Path], catalog: Catalog) -> list[ServingCase]:
    """perdollar's own transformers step timings as ``hf`` cases: prefill of a batch of prompts
    (tokens/s) and decode steps of a batch at a context (tokens/s)."""
    cases = []
    arch = _architecture("llama-3.1-8b")
    for path in paths:
        frame = pd.read_csv(path)
        frame = frame[(frame["status"] == "ok") & (frame["engine"] == "hf")]
        for row in frame.itertuples(index=False):
            chip = catalog.accelerator(_GPU_NAMES.get(str(row.gpu), str(row.gpu)))
            fmt = with_kv_precision(serving_format(str(row.precision)), str(row.kv_precision))
            batch, context = int(row.batch), int(row.context_tokens)
            kind = "prefill" if row.phase == "prefill" else "decode-step"
            cases.append(ServingCase(chip.key, str(row.model), arch, fmt, GroupShape(), kind, context, 1,
                                     batch, float(row.tokens_per_s), "hf", source=path.name))  # fmt: skip
    return cases


def leave_one_source_out(
    cases: list[ServingCase],
    chips: Mapping[str, Accelerator],
    start: ServingEfficiency,
    fixed: frozenset[str],
) -> list[tuple[ServingCase, float]]:
    """Each case's |predicted / measured − 1| under parameters fitted on the engine's other sources
    (:func:`perdollar.predict.llm_serving.published.fit_engine`).

    A source alone in its engine has nothing to be fitted on: it is predicted from ``start``.
    """
    out = []
    for source in sorted({case.source for case in cases}):
        held = [case for case in cases if case.source == source]
        rest = [case for case in cases if case.source != source]
        fitted = fit_engine(rest, chips, start, fixed=fixed) if rest else start
        out += [(case, error) for case in held for error in errors([case], chips, fitted)]
    return out


def with_host_step(eff: ServingEfficiency, seconds: float) -> ServingEfficiency:
    return replace(eff, step_overhead_s=seconds, step_overhead_s_per_layer=0.0)
