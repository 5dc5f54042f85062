"""How `perdollar predict --inference` shows an LLM serving prediction: JSON and text."""

from __future__ import annotations

import math
from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape

from perdollar.fmt import format_band, format_number
from perdollar.predict.llm_serving import LLMServingPrediction, RequestShape
from perdollar.predict.llm_serving.bands import Band, builds_sentence, engine_builds
from perdollar.predict.llm_serving.offered_load import LoadFigures, Quantiles
from perdollar.predict.llm_serving.worth import FeatureWorth
from perdollar.workload.llm.architecture import DecoderArchitecture

BAND_LEVEL = 0.8
UNITS = {
    "output_tokens_per_second": "output tokens/s, total over all GPUs",
    "ttft_ms": "ms, one request's prompt, unqueued",
    "tpot_ms": "ms per output token of one sequence",
    "kv_cache_gib": "GiB per GPU left for the KV cache",
    "max_concurrent_sequences": "sequences of input + output tokens, all replicas",
}


def prediction_document(
    arch: DecoderArchitecture,
    accelerator: str,
    gpus: int,
    replicas: int,
    work: RequestShape,
    p: LLMServingPrediction,
    worth: Mapping[str, FeatureWorth] | None = None,
    bands: dict[str, Band] | None = None,
    *,
    load: LoadFigures | None = None,
) -> dict[str, object]:
    """Rates total over all ``gpus`` (``replicas`` independent copies of one replica, or of one
    xPyD set of replicas when disaggregated); ``worth``: each feature in use, with it and without;
    ``bands``: each figure's band from the held-out error of predictions like it; ``load``: the
    figures at the requests in flight or the rate asked for."""
    figures = {"throughput": p.output_tokens_per_second * replicas, "ttft": p.ttft_ms, "tpot": p.tpot_ms}
    banded = {name: band.document(figures[name]) for name, band in (bands or {}).items() if p.fits}
    units = dict(UNITS)  # a load adds its own
    document: dict[str, object] = {
        "model": arch.name,
        "accelerator": accelerator,
        "gpus": gpus,
        "replicas": replicas,
        "tensor_parallel": p.tensor_parallel,
        "pipeline_parallel": p.pipeline_parallel,
        "expert_parallel": p.expert_parallel,
        "disaggregation": p.disaggregation or None,
        "prefix_share": work.prefix_share,
        "speculative": work.speculation.method if work.speculation else None,
        "precision": p.precision,
        "engine": p.engine,
        "engine_build": engine_build(p.engine),
        "engine_build_speed": engine_build_speed(p.engine),
        "engine_builds_held_out": [b.document() for b in engine_builds(p.engine)],
        "kv_precision": p.kv_precision,
        "input_tokens": work.input_tokens,
        "output_tokens": work.output_tokens,
        "mode": p.mode,
        "batch": p.batch,
        "output_tokens_per_second": p.output_tokens_per_second * replicas,
        "output_tokens_per_second_low": p.output_tokens_per_second_low * replicas,
        "output_tokens_per_second_high": p.output_tokens_per_second_high * replicas,
        "band": {
            "level": BAND_LEVEL,
            "low": p.output_tokens_per_second_low * replicas,
            "high": p.output_tokens_per_second_high * replicas,
            **({"group": banded["throughput"]["group"]} if "throughput" in banded else {}),
        },
        "bands": banded,
        "requests_per_second": p.requests_per_second * replicas,
        "ttft_ms": p.ttft_ms,
        "tpot_ms": p.tpot_ms,
        "max_concurrent_sequences": p.max_concurrent_sequences * replicas,
        "kv_cache_gib": p.kv_cache_gib,
        "weights_gib_per_gpu": p.weights_gib_per_gpu,
        "fits": p.fits,
        "fit_reason": p.fit_reason,
        "bottleneck": p.bottleneck,
        "basis": p.basis,
        "breakdown_ms": p.breakdown_ms,
        "features": worth or {},
        "units": units,
    }
    if load is not None:
        at_load = load_document(load, p.engine)
        document.update(at_load)
        units.update(LOAD_UNITS)
        # The figures at the load carry the band of their figure, around each quantile.
        for name in ("ttft", "tpot"):
            band = (bands or {}).get(name)
            for quantile in ("p50", "p99"):
                value = at_load.get(f"{name}_{quantile}_ms")
                if band is not None and isinstance(value, int | float) and p.fits:
                    banded[f"{name}_{quantile}"] = band.document(value)
    return document


LOAD_UNITS = {
    "ttft_p50_ms": "ms from a request's arrival to its first token, queueing included",
    "tpot_p50_ms": "ms per output token after the first, per request: (end-to-end − TTFT) / (output − 1)",
    "itl_p50_ms": "ms between two tokens of one sequence, over every token",
    "e2e_p50_ms": "ms from a request's arrival to its last token",
    "requests_per_second": "requests/s served, total over all GPUs",
    "capacity_requests_per_second": "requests/s the replicas serve with every admitted slot busy",
    "prefill_token_budget": "prompt and decode tokens the engine schedules in one step (null: whole prompts)",
    "mean_running": "requests admitted on a replica, on average",
}


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def load_document(load: LoadFigures, engine: str) -> dict[str, float | str | None]:
    """The keys a load adds: quantiles in ms (null over capacity), what was offered, the scheduler."""
    from perdollar.predict.llm_serving.engines import serving_engine

    figures: dict[str, float | str | None] = {
        "concurrency": load.load.concurrency,
        "offered_requests_per_second": load.load.requests_per_second,
        "over_capacity": load.over_capacity,
        "queue": "grows without bound" if load.over_capacity else "steady",
    }
    for name, quantiles in (("ttft", load.ttft_ms), ("tpot", load.tpot_ms), ("itl", load.itl_ms),
                            ("e2e", load.e2e_ms)):  # fmt: skip
        figures[f"{name}_p50_ms"] = _finite(quantiles.p50)
        figures[f"{name}_p99_ms"] = _finite(quantiles.p99)
    version = serving_engine(engine).version
    figures |= {
        "capacity_requests_per_second": load.capacity_requests_per_second,
        "mean_running": load.mean_running,
        "running_cap": load.running_cap,
        "prefill_token_budget": load.prefill_token_budget,
        "measured_requests": load.measured_requests,
        "engine_version": version,
        "engine_build": engine_build(engine),
    }
    return figures


def print_prediction(
    console: Console,
    arch: DecoderArchitecture,
    accelerator: str,
    gpus: int,
    replicas: int,
    work: RequestShape,
    p: LLMServingPrediction,
    worth: Mapping[str, FeatureWorth] | None = None,
    bands: dict[str, Band] | None = None,
    *,
    load: LoadFigures | None = None,
) -> None:
    layout = f"TP {p.tensor_parallel}" + (f" × PP {p.pipeline_parallel}" if p.pipeline_parallel > 1 else "")
    if p.expert_parallel > 1:
        layout += f", EP {p.expert_parallel}"
    if p.disaggregation:
        layout += f", {p.disaggregation}"
    console.print(
        f"[bold]{escape(arch.name)}[/] served on {gpus} × {accelerator} ({replicas} replica(s) of {layout}, "
        f"{p.precision}, KV cache {p.kv_precision}) with {p.engine}, {work.input_tokens} input → "
        f"{work.output_tokens} output tokens"
    )
    if not p.fits:
        label = "cannot run" if p.bottleneck in ("unsupported-format", "model-shape") else "does not fit"
        console.print(f"[yellow]{label}:[/] {escape(p.fit_reason)}")
        return
    if load is not None:
        label = f"at {load.load.label}, {p.batch:.3g} running per replica on average"
    elif p.mode == "static-batch":
        label = f"static batch {p.batch:g}"
    else:
        label = f"max load, {p.batch:g} running per replica"
    band = format_band(
        p.output_tokens_per_second * replicas,
        p.output_tokens_per_second_low * replicas,
        p.output_tokens_per_second_high * replicas,
        "output tokens/s",
    )
    bands = bands or {}
    origin = escape(_band_origin(bands.get("throughput")))
    console.print(f"throughput: {band}  [dim]({label}; {origin}; basis: {p.basis})[/]")
    if load is not None:
        for line in load_lines(load, p.engine):
            console.print(line, highlight=False, markup=False)
    if load is None:
        console.print(
            f"latency: TTFT {_banded(p.ttft_ms, bands.get('ttft'))} ms (prompt alone) · TPOT "
            f"{_banded(p.tpot_ms, bands.get('tpot'))} ms · bottleneck: {p.bottleneck}"
        )
    else:
        console.print(f"one request alone: TTFT {format_number(p.ttft_ms)} ms · bottleneck: {p.bottleneck}")
    if bands:
        console.print(f"[dim]{escape(band_line(bands))}[/]")
        version = _engine_version(p.engine)
        if version:
            console.print(f"[dim]{escape(builds_sentence(p.engine, version))}[/]")
    console.print(
        f"memory per GPU: weights {p.weights_gib_per_gpu:.1f} GiB · KV cache {p.kv_cache_gib:.1f} GiB "
        f"→ {p.max_concurrent_sequences * replicas} concurrent sequences"
    )
    if p.breakdown_ms:
        console.print(step_line(p.breakdown_ms), highlight=False)
    if p.tensor_parallel > arch.num_key_value_heads:
        copies = p.tensor_parallel // arch.num_key_value_heads
        console.print(
            f"note: TP {p.tensor_parallel} exceeds the model's {arch.num_key_value_heads} KV heads: each KV "
            f"head is copied onto {copies} ranks (as vLLM does), so the KV cache per GPU holds one head",
            highlight=False,
        )
    for line in worth_lines(worth or {}):
        console.print(line, highlight=False, markup=False)


def load_lines(load: LoadFigures, engine: str) -> list[str]:
    """The latencies at the load asked for, p50 and p99, and the scheduler they come from."""
    from perdollar.predict.llm_serving.engines import serving_engine

    budget = (
        f"chunked prefill, {load.prefill_token_budget} tokens a step"
        if load.prefill_token_budget
        else "whole prompts a step"
    )
    scheduler = (
        f"scheduler: {engine} {serving_engine(engine).version} defaults, {budget}, up to {load.running_cap} "
        f"running a replica"
    )
    if not load.over_capacity:
        scheduler += f"; {load.measured_requests} requests simulated in steady state"
    if load.over_capacity:
        return [
            f"over capacity: {load.load.label} offered, the replicas serve at most "
            f"{format_number(load.capacity_requests_per_second)} requests/s: the queue grows without bound, "
            "so no latency holds; add GPUs (--gpus) or lower --rps",
            scheduler,
        ]

    def pair(quantiles: Quantiles, scale: float = 1.0) -> str:
        return f"{format_number(quantiles.p50 / scale)} / {format_number(quantiles.p99 / scale)}"

    lines = [
        f"latency p50 / p99: TTFT {pair(load.ttft_ms)} ms · TPOT {pair(load.tpot_ms)} ms · ITL "
        f"{pair(load.itl_ms)} ms · end-to-end {pair(load.e2e_ms, 1e3)} s",
        f"served: {format_number(load.requests_per_second)} requests/s (capacity "
        f"{format_number(load.capacity_requests_per_second)} requests/s)",
        scheduler,
    ]
    if load.load.concurrency is not None and load.mean_running < load.load.concurrency - 0.5:
        lines.append(
            f"note: {load.running_cap} requests fit a replica at once; the others wait in the queue, "
            "and their wait is in the TTFT"
        )
    return lines


def _engine_version(engine: str) -> str | None:
    from perdollar.errors import PerdollarError
    from perdollar.predict.llm_serving.engines import serving_engine

    if not engine:
        return None
    try:
        return serving_engine(engine).version
    except PerdollarError:
        return None


def engine_build(engine: str) -> str | None:
    """The engine build whose record the figures come from ("vllm 0.10", "vllm 2024 builds"), None
    when unknown."""
    version = _engine_version(engine)
    return f"{engine.partition('@')[0]} {version}" if version else None


def engine_build_speed(engine: str) -> float | None:
    """The held-out speed factor of a dated build on today's record (1.0 for today's build)."""
    from perdollar.errors import PerdollarError
    from perdollar.predict.llm_serving.engines import serving_engine

    try:
        build = serving_engine(engine).build if engine else None
    except PerdollarError:
        return None
    return build.speed if build else 1.0


def _band_origin(band: Band | None) -> str:
    if band is None:
        return "80% band"
    if not band.validated:
        return "80% band: unvalidated, wide"
    return f"80% band of {band.rows} held-out rows like it"


def _banded(value: float, band: Band | None) -> str:
    if band is None:
        return format_number(value)
    return format_band(value, *band.around(value))


def band_line(bands: dict[str, Band]) -> str:
    """Where each figure's band comes from: the group of held-out rows, or that none was checked."""
    labels = {"throughput": "throughput", "ttft": "TTFT", "tpot": "TPOT"}
    parts = [
        f"{band.group} ({band.rows} rows)" if band.validated else f"{labels.get(name, name)} unvalidated"
        for name, band in bands.items()
    ]
    return "80% bands from held-out errors: " + "; ".join(parts)


# The step's parts as the breakdown names them, in the order a step runs them.
STEP_PARTS = {
    "memory": "weights and KV read", "compute": "products", "communication": "collectives",
    "overhead": "host", "moe_routing": "MoE routing", "moe_experts": "experts",
    "moe_all_to_all": "all-to-all", "proposer": "draft passes",
}  # fmt: skip


def step_line(breakdown: dict[str, float]) -> str:
    """One decode step by part, in ms (a MoE model's layers apart from attention and the dense
    layers); reads and products of a part overlap, so the parts need not add up to the step."""
    parts = [f"{STEP_PARTS.get(name, name)} {format_number(ms)}" for name, ms in breakdown.items()
             if name in STEP_PARTS]  # fmt: skip
    return "step (ms): " + " · ".join(parts)


def _shown(change: FeatureWorth, name: str) -> str:
    value = change[name]
    if isinstance(value, str):
        raise TypeError(f"the feature's {name} is a text, not a number")  # feature_worth gives numbers
    return format_number(value)


def _figures(change: FeatureWorth) -> str:
    return (
        f"{_shown(change, 'output_tokens_per_second_without')} → "
        f"{_shown(change, 'output_tokens_per_second')} output tokens/s, TTFT "
        f"{_shown(change, 'ttft_ms_without')} → {_shown(change, 'ttft_ms')} ms, TPOT "
        f"{_shown(change, 'tpot_ms_without')} → {_shown(change, 'tpot_ms')} ms"
    )


def worth_lines(worth: Mapping[str, FeatureWorth]) -> list[str]:
    """One line per feature in use: what it changes against the same GPUs without it."""
    lines = []
    if prefix := worth.get("prefix_caching"):
        lines.append(
            f"what prefix caching is worth ({prefix['cached_tokens']} prompt tokens cached): "
            f"{_figures(prefix)}; {prefix['max_concurrent_sequences_without']} → "
            f"{prefix['max_concurrent_sequences']} sequences fit"
        )
    if spec := worth.get("speculative_decoding"):
        lines.append(
            f"what {spec['method']} speculative decoding is worth ({spec['speculative_tokens']} proposed, "
            f"acceptance {spec['acceptance']:g} → {spec['expected_tokens_per_step']:.2f} tokens a verify "
            f"step, (1−a^(k+1))/(1−a), Leviathan et al. 2023): {_figures(spec)}"
        )
    if expert := worth.get("expert_parallel"):
        against = expert["compared_with"]
        if not expert["fits_without"]:
            lines.append(f"what expert parallel {expert['expert_parallel']} is worth: {against} does not fit")
        else:
            lines.append(
                f"what expert parallel {expert['expert_parallel']} (attention TP "
                f"{expert['attention_tensor_parallel']} × DP {expert['attention_data_parallel']}) is worth "
                f"against {against}: {_figures(expert)}"
            )
    if split := worth.get("disaggregation"):
        lines.append(
            f"what {split['layout']} disaggregation is worth against {split['compared_with']}: "
            f"{_figures(split)} (KV transfer {_shown(split, 'kv_transfer_ms')} ms in the TTFT; "
            f"prefill pool {_shown(split, 'prefill_pool_requests_per_second')} req/s, decode pool "
            f"{_shown(split, 'decode_pool_requests_per_second')} req/s)"
        )
    return lines
