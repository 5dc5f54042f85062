"""``perdollar serve-bench``: a real HTTP model server on this machine, load-tested at rising rates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer

from perdollar.cli import common
from perdollar.cli.declared import Group, StoreChoice, takes
from perdollar.cli.serving_render import load_table
from perdollar.cli.shared_options import OPTIONS, OUTPUT, STEP, Output, Step
from perdollar.errors import PerdollarError
from perdollar.question import declared

if TYPE_CHECKING:
    from perdollar.measure.serving.loadgen import LoadResult
    from perdollar.measure.serving.server import RunningServer

SERVE_BENCH_HELP = (
    "Start a real HTTP model server on 127.0.0.1 and load-test it at rising request rates.\n\n"
    "The server (uvicorn + a small Starlette app) runs one forward pass of WORKLOAD per request on one "
    "model replica. A bounded open-loop client offers Poisson traffic at each rate for --step-seconds and "
    "reports P50/P90/P95/P99 latency, counted from each request's scheduled send time so that queueing in "
    "the server counts, and the achieved rate. It stops when the server falls behind (achieved < 90% of "
    "offered), requests fail, P99 crosses --p99-ceiling-ms, or --max-rps is reached.\n\n"
    "  perdollar serve-bench mlp\n\n"
    "  perdollar serve-bench bert-base --rates 2,5,10 --step-seconds 3\n\n"
    "  perdollar serve-bench mlp --noop --start-rps 500 --max-rps 8000   (the HTTP path alone)\n\n"
    "With --url, no server is started: the running OpenAI-compatible LLM server there (vLLM, TGI, "
    "SGLang, llama.cpp) gets streaming completions at rising Poisson rates (--rates, default "
    "0.5 to 64 requests/s), each step bounded by --max-requests and --step-seconds. TTFT, TPOT and "
    "end-to-end percentiles, output tokens/s, errors, stalls and dropped connections are reported "
    "and stored as a measurement of that model.\n\n"
    "  perdollar serve-bench --url http://127.0.0.1:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct"
)

MAX_RATE_STEPS = 30
SATURATED = 0.9  # achieved / offered below this: the server cannot keep up


def _parse_rates(text: str | None) -> list[float] | None:
    if not text:
        return None
    try:
        rates = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PerdollarError(
            f"--rates {text!r} is not a list of numbers", "write it like 10,50,100"
        ) from None
    if not rates or any(rate <= 0 for rate in rates):
        raise PerdollarError(f"--rates {text!r} must hold positive rates", "write it like 10,50,100")
    return rates[:MAX_RATE_STEPS]


def rate_ladder(start: float, stop: float, growth: float) -> list[float]:
    if start <= 0 or stop < start or growth <= 1:
        raise PerdollarError(
            "rates must satisfy 0 < --start-rps ≤ --max-rps and --growth > 1",
            "e.g. --start-rps 5 --max-rps 2000 --growth 2",
        )
    rates: list[float] = []
    rate = start
    while rate <= stop * (1 + 1e-9) and len(rates) < MAX_RATE_STEPS:
        rates.append(rate)
        rate *= growth
    return rates


def run_serve_bench(
    workload: str | None,
    *,
    rates: list[float],
    step_seconds: float,
    batch_size: int | None,
    precision: str | None,
    device: str,
    connections: int,
    p99_ceiling_ms: float | None,
    report: Callable[[str, float], None] | None = None,
) -> tuple[RunningServer, list[LoadResult], str]:
    """Load-test a fresh server at each rate; returns (server info, results, why it stopped)."""
    from perdollar.measure.serving.loadgen import open_loop
    from perdollar.measure.serving.server import running_server

    path, method, body = ("/noop", "GET", b"") if workload is None else ("/predict", "POST", b"{}")
    results: list[LoadResult] = []
    reason = "reached the last rate"
    max_seconds = len(rates) * (step_seconds + 10) + 120
    with running_server(
        workload, batch_size=batch_size, precision=precision, device=device, max_seconds=max_seconds
    ) as server:
        for index, rate in enumerate(rates):
            if report:
                report(f"{rate:g} requests/s", index / len(rates))
            try:
                result = open_loop(
                    server.host,
                    server.port,
                    rate=rate,
                    duration_s=step_seconds,
                    path=path,
                    method=method,
                    body=body,
                    connections=connections,
                    seed=index,
                )
            except OSError as error:  # the server went away: what was measured so far stands
                reason = f"could not reach the server at {rate:g} requests/s ({error})"
                break
            results.append(result)
            if result.error_fraction > 0.01:
                reason = f"{result.errors} failed requests at {rate:g} requests/s"
                break
            if result.achieved_rps < SATURATED * (result.scheduled_rps or rate):
                reason = (
                    f"saturated: {result.achieved_rps:,.4g} of {rate:g} requests/s offered were served "
                    "on schedule"
                )
                break
            if p99_ceiling_ms is not None and result.p99_ms > p99_ceiling_ms:
                reason = f"P99 {result.p99_ms:.3g} ms crossed the {p99_ceiling_ms:g} ms ceiling at {rate:g}/s"
                break
    return server, results, reason


@dataclass(frozen=True, slots=True)
class LoadLadder:
    """The rates a local server is offered, for how long each, over which client, on which device."""

    rates: str | None = declared(None, "--rates", "Exact rates to offer, e.g. 10,50,100 (req/s).")
    start_rps: float = declared(5.0, "--start-rps", "First offered rate (requests/s).")
    max_rps: float = declared(5000.0, "--max-rps", "Last offered rate (requests/s).")
    growth: float = declared(2.0, "--growth", "Each step offers this many times the last rate.")
    step_seconds: float | None = declared(
        None, "--step-seconds", "Seconds of traffic per rate (default 2; with --url 30; ≤ 60)."
    )
    p99_ceiling_ms: float | None = declared(None, "--p99-ceiling-ms", "Stop once P99 exceeds this (ms).")
    connections: int = declared(64, "--connections", "Keep-alive connections of the client.")
    noop: bool = declared(False, "--noop", "Load the server's no-op endpoint (no model).")
    # Not a fixed set of choices: resolve_device reads cuda:N too.
    device: str = declared("cpu", "--device", "cpu, cuda, auto.")


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An OpenAI-compatible server measured by its URL, and what it serves."""

    url: str | None = declared(None, "--url", "An OpenAI-compatible server's base URL (…/v1).")
    model: str = declared("", "--model", "With --url: the model name the server serves.")
    input_tokens: int = declared(
        512, "--input-tokens", "With --url: prompt tokens.", unit="tokens", minimum=1
    )
    output_tokens: int = declared(128, "--output-tokens", "With --url: tokens out.", unit="tokens", minimum=1)
    chat: bool = declared(False, "--chat", "With --url: use /chat/completions.")
    max_requests: int = declared(100, "--max-requests", "With --url: requests per rate.", minimum=1)
    stall_seconds: float = declared(30.0, "--stall-seconds", "With --url: stall limit.", unit="s")
    accelerator: str | None = declared(None, "--accelerator", "With --url: the server's GPU.")
    gpus: int = declared(1, "--gpus", "With --url: GPUs behind the endpoint.", minimum=1)
    engine: str | None = declared(
        None,
        "--engine",
        "With --url: the serving engine behind it (vllm, sglang, tensorrt-llm, tgi, "
        "llama.cpp, hf); the run then calibrates that engine's predictions only (default: vllm's).",
        parse="engines",
    )


@takes(
    ladder=Group(LoadLadder, panel=OPTIONS), endpoint=Endpoint, store=StoreChoice, step=STEP, output=OUTPUT
)
def serve_bench_command(
    workload: str = typer.Argument(
        None,
        help="Built-in name (mlp, bert-base, …) or file.py:function. With --url: the language model "
        "served (llama-3.1-8b, a config.json), so the run calibrates its serving predictions.",
    ),
    *,
    ladder: LoadLadder,
    endpoint: Endpoint,
    store: StoreChoice,
    step: Step,
    output: Output,
) -> int:
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    rates, step_seconds, connections, noop = (
        ladder.rates,
        ladder.step_seconds,
        ladder.connections,
        ladder.noop,
    )
    start_rps, max_rps, growth, p99_ceiling_ms = (
        ladder.start_rps,
        ladder.max_rps,
        ladder.growth,
        ladder.p99_ceiling_ms,
    )
    device = ladder.device
    if endpoint.url is not None:
        return _bench_url(endpoint, workload, rates, step_seconds, precision, store, json_output)
    if workload is None:
        raise PerdollarError("serve-bench needs a WORKLOAD or --url", "e.g. perdollar serve-bench mlp")
    step_seconds = 2.0 if step_seconds is None else step_seconds
    if not 0 < step_seconds <= 60:
        raise PerdollarError(
            f"--step-seconds must be in (0, 60], got {step_seconds:g}", "e.g. --step-seconds 2"
        )
    if not 1 <= connections <= 1024:
        raise PerdollarError(f"--connections must be 1–1024, got {connections}", "e.g. --connections 64")
    offered = _parse_rates(rates) or rate_ladder(start_rps, max_rps, growth)
    from perdollar.workload.step import resolve_device

    resolve_device(device)
    if not noop:
        from perdollar.workload import load_workload

        # Checked here: inside the server process a bad name would only say the server did not start.
        load_workload(workload, batch_size=batch_size, precision=precision, kind="inference")
    with common.progress("serve-bench", total=1.0, quiet=json_output) as bar:
        bar.update(description=f"starting the server for {workload}")
        server, results, reason = run_serve_bench(
            None if noop else workload, rates=offered, step_seconds=step_seconds,
            batch_size=1 if batch_size is None and not noop else batch_size, precision=precision,
            device=device, connections=connections, p99_ceiling_ms=p99_ceiling_ms,
            report=lambda phase, fraction: bar.update(description=f"offering {phase}", completed=fraction),
        )  # fmt: skip
    if json_output:
        common.emit_json(
            {
                "workload": None if noop else workload,
                "in_process_forward_ms": None if noop else server.forward_ms,
                "batch_size": server.batch_size,
                "endpoint": "/noop" if noop else "/predict",
                "steps": results,
                "stop_reason": reason,
            },
            table="steps",
        )
        return 0
    _print_load(workload, noop, server, results, reason, step_seconds)
    return 0


def _bench_url(
    endpoint: Endpoint, workload: str | None, rates: str | None, step_seconds: float | None,
    precision: str | None, store: StoreChoice, json_output: bool,
) -> int:  # fmt: skip
    from perdollar.cli.serve_bench_url import run_url_bench
    from perdollar.measure.serving.openai_load import LoadSettings

    seconds = 30.0 if step_seconds is None else step_seconds
    if not 0 < seconds <= 600 or endpoint.stall_seconds <= 0:
        raise PerdollarError("--step-seconds must be in (0, 600], --stall-seconds > 0", "e.g. 30")
    assert endpoint.url is not None
    settings = LoadSettings(
        endpoint.url, endpoint.model, endpoint.input_tokens, endpoint.output_tokens, endpoint.chat, seconds,
        endpoint.max_requests, endpoint.stall_seconds,
        request_timeout_s=max(300.0, 4 * endpoint.stall_seconds),
    )  # fmt: skip
    engine = None
    if endpoint.engine is not None:
        from perdollar.predict.llm_serving.engines import serving_engine

        engine = serving_engine(endpoint.engine).name  # an unknown name is refused before the run
    return run_url_bench(
        settings, rates=_parse_rates(rates), accelerator=endpoint.accelerator, gpus=endpoint.gpus,
        precision=precision, store=store.enabled, store_url=store.store_url, json_output=json_output,
        workload=workload, engine=engine,
    )  # fmt: skip


def _print_load(
    workload: str,
    noop: bool,
    server: RunningServer,
    results: list[LoadResult],
    reason: str,
    step_seconds: float,
) -> None:
    target = "no-op endpoint" if noop else f"{workload} at batch {server.batch_size} per request"
    common.print_table(
        load_table(
            f"HTTP serving check: {target}, uvicorn on 127.0.0.1, latency in ms, "
            f"{step_seconds:g} s of Poisson traffic per rate",
            results,
        )
    )
    common.console.print(
        f"Stopped: {reason}. Latency counts from each request's scheduled send time.",
        highlight=False,
    )
    if not noop and results and server.forward_ms > 0:
        overhead = results[0].p50_ms - server.forward_ms
        common.console.print(
            f"In-process forward pass at batch {server.batch_size}: {server.forward_ms:.3g} ms (median "
            f"of warm-up); at {results[0].offered_rps:g} requests/s the HTTP client's P50 is "
            f"{results[0].p50_ms:.3g} ms, so HTTP and queueing add about {overhead:.2g} ms.",
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app``."""
    app.command("serve-bench", help=SERVE_BENCH_HELP, no_args_is_help=True)(serve_bench_command)
