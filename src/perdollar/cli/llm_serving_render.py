"""How `perdollar predict --inference` shows an LLM serving prediction: JSON and text."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from perdollar.fmt import format_band, format_number
from perdollar.predict.llm_serving import LLMServingPrediction, Workload
from perdollar.workload.llm.architecture import DecoderArchitecture

BAND_LEVEL = 0.8


def prediction_document(
    arch: DecoderArchitecture,
    accelerator: str,
    gpus: int,
    replicas: int,
    work: Workload,
    p: LLMServingPrediction,
) -> dict[str, Any]:
    """Rates total over all ``gpus`` (``replicas`` independent copies of one replica)."""
    return {
        "model": arch.name,
        "accelerator": accelerator,
        "gpus": gpus,
        "replicas": replicas,
        "tensor_parallel": p.tensor_parallel,
        "pipeline_parallel": p.pipeline_parallel,
        "precision": p.precision,
        "engine": p.engine,
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
        },
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
        "units": {
            "output_tokens_per_second": "output tokens/s, total over all GPUs",
            "ttft_ms": "ms, one request's prompt, unqueued",
            "tpot_ms": "ms per output token of one sequence",
            "kv_cache_gib": "GiB per GPU left for the KV cache",
            "max_concurrent_sequences": "sequences of input + output tokens, all replicas",
        },
    }


def print_prediction(
    console: Console,
    arch: DecoderArchitecture,
    accelerator: str,
    gpus: int,
    replicas: int,
    work: Workload,
    p: LLMServingPrediction,
) -> None:
    layout = f"TP {p.tensor_parallel}" + (f" × PP {p.pipeline_parallel}" if p.pipeline_parallel > 1 else "")
    console.print(
        f"[bold]{escape(arch.name)}[/] served on {gpus} × {accelerator} ({replicas} replica(s) of {layout}, "
        f"{p.precision}, KV cache {p.kv_precision}) with {p.engine}, {work.input_tokens} input → "
        f"{work.output_tokens} output tokens"
    )
    if not p.fits:
        label = "cannot run" if p.bottleneck in ("unsupported-format", "model-shape") else "does not fit"
        console.print(f"[yellow]{label}:[/] {escape(p.fit_reason)}")
        return
    load = (
        f"static batch {p.batch:g}"
        if p.mode == "static-batch"
        else f"max load, {p.batch:g} running per replica"
    )
    band = format_band(
        p.output_tokens_per_second * replicas,
        p.output_tokens_per_second_low * replicas,
        p.output_tokens_per_second_high * replicas,
        "output tokens/s",
    )
    console.print(f"throughput: {band}  [dim]({load}; 80% band; basis: {p.basis})[/]")
    console.print(
        f"latency: TTFT {format_number(p.ttft_ms)} ms (prompt alone) · TPOT {format_number(p.tpot_ms)} ms "
        f"· bottleneck: {p.bottleneck}"
    )
    console.print(
        f"memory per GPU: weights {p.weights_gib_per_gpu:.1f} GiB · KV cache {p.kv_cache_gib:.1f} GiB "
        f"→ {p.max_concurrent_sequences * replicas} concurrent sequences"
    )
    if p.tensor_parallel > arch.num_key_value_heads:
        copies = p.tensor_parallel // arch.num_key_value_heads
        console.print(
            f"note: TP {p.tensor_parallel} exceeds the model's {arch.num_key_value_heads} KV heads: each KV "
            f"head is copied onto {copies} ranks (as vLLM does), so the KV cache per GPU holds one head",
            highlight=False,
        )
