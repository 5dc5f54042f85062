"""Open-loop load on an OpenAI-compatible LLM server: Poisson arrivals at rising rates.

Each step offers one rate for a bounded number of requests and seconds; requests are sent on
their schedule whether or not earlier ones have finished (open loop), so a server that falls
behind shows it in the time to first token. Steps stop rising once the server fails requests,
falls behind the offered rate, or crosses a TTFT ceiling.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from urllib.parse import urlsplit

import httpx

from perdollar.errors import PerdollarError
from perdollar.fmt import mask_url, mask_urls_in
from perdollar.measure.result import HostFingerprint, Measurement, Rate, Status
from perdollar.measure.serving.openai_client import (
    StreamResult,
    request_body,
    stream_completion,
    synthetic_prompt,
)
from perdollar.measure.steady import percentile

SATURATED = 0.9  # completed / offered below this: the server cannot keep up
MAX_ERROR_FRACTION = 0.01
QUANTILES = (50, 90, 99)


@dataclass(frozen=True, slots=True)
class LoadSettings:
    url: str  # the server's base, e.g. http://127.0.0.1:8000/v1
    model: str
    input_tokens: int = 512
    output_tokens: int = 128
    chat: bool = False
    step_seconds: float = 30.0  # the longest one step sends for
    max_requests_per_step: int = 200
    stall_s: float = 30.0  # no first or next token for this long: the request stalled
    request_timeout_s: float = 300.0
    ttft_ceiling_ms: float | None = None

    @property
    def endpoint(self) -> str:
        # A gateway's token may ride in the query (?api_key=…): the path goes before it.
        base, mark, query = self.url.partition("?")
        base = base.rstrip("/")
        if not base.endswith(("/completions", "/chat/completions")):
            if not base.endswith("/v1"):
                base += "/v1"
            base += "/chat/completions" if self.chat else "/completions"
        return base + mark + query

    @property
    def shown_endpoint(self) -> str:
        """The endpoint as it may be printed or stored (credentials masked)."""
        return mask_url(self.endpoint)


@dataclass(frozen=True, slots=True)
class RateStep:
    """What one offered rate produced; latencies in ms at the 50th, 90th and 99th percentiles."""

    offered_rps: float
    sent: int
    ok: int
    errors: int
    timeouts: int  # request deadline passed, or a stall
    dropped: int
    duration_s: float  # first send to last answer
    schedule_s: float  # first to last scheduled send
    completed_rps: float
    output_tokens_per_second: float
    ttft_ms: dict[str, float] = field(default_factory=dict)
    tpot_ms: dict[str, float] = field(default_factory=dict)
    end_to_end_ms: dict[str, float] = field(default_factory=dict)
    failures: tuple[str, ...] = ()  # the first few failure details

    @property
    def failed_fraction(self) -> float:
        return (self.sent - self.ok) / self.sent if self.sent else 0.0


def _quantiles(values: Sequence[float]) -> dict[str, float]:
    return {f"p{q}": percentile(values, q) * 1e3 for q in QUANTILES} if values else {}


def summarise(
    offered: float, results: Sequence[StreamResult], duration_s: float, schedule_s: float = 0.0
) -> RateStep:
    ok = [r for r in results if r.outcome == "ok"]
    count = {
        name: sum(r.outcome == name for r in results) for name in ("error", "timeout", "stalled", "dropped")
    }
    tokens = sum(r.output_tokens for r in ok)
    return RateStep(
        offered_rps=offered,
        sent=len(results),
        ok=len(ok),
        errors=count["error"],
        timeouts=count["timeout"] + count["stalled"],
        dropped=count["dropped"],
        duration_s=duration_s,
        schedule_s=schedule_s,
        completed_rps=len(ok) / duration_s if duration_s > 0 else 0.0,
        output_tokens_per_second=tokens / duration_s if duration_s > 0 else 0.0,
        ttft_ms=_quantiles([r.ttft_s for r in ok if r.ttft_s is not None]),
        tpot_ms=_quantiles([t for r in ok if (t := r.tpot_s) is not None]),
        end_to_end_ms=_quantiles([r.end_to_end_s for r in ok if r.end_to_end_s is not None]),
        failures=tuple(mask_urls_in(f"{r.outcome}: {r.detail}") for r in results if r.outcome != "ok")[:5],
    )


def arrival_times(rate: float, max_requests: int, max_seconds: float, seed: int) -> list[float]:
    """Poisson arrivals (exponential gaps) at ``rate``, as many as fit both bounds."""
    draw = random.Random(seed)
    times: list[float] = []
    now = 0.0
    while len(times) < max_requests:
        now += draw.expovariate(rate)
        if now > max_seconds:
            break
        times.append(now)
    return times or [0.0]


async def _step(settings: LoadSettings, rate: float, seed: int) -> RateStep:
    schedule = arrival_times(rate, settings.max_requests_per_step, settings.step_seconds, seed)
    body = request_body(
        settings.model, synthetic_prompt(settings.input_tokens), settings.output_tokens, chat=settings.chat
    )
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
    timeout = httpx.Timeout(settings.request_timeout_s, connect=min(10.0, settings.request_timeout_s))
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:
        start = time.perf_counter()

        async def one(at: float) -> StreamResult:
            await asyncio.sleep(max(0.0, at - (time.perf_counter() - start)))
            request = stream_completion(
                client, settings.endpoint, body, scheduled_s=at, step_start=start, stall_s=settings.stall_s
            )
            try:
                return await asyncio.wait_for(request, timeout=settings.request_timeout_s)
            except TimeoutError:
                return StreamResult("timeout", at, None, None, 0, f"over {settings.request_timeout_s:g} s")

        results = await asyncio.gather(*(one(at) for at in schedule))
        elapsed = time.perf_counter() - start
    return summarise(rate, results, max(elapsed, schedule[-1]), schedule[-1])


def _saturated(step: RateStep) -> bool:
    """Completions trail the schedule: past the drain of the last requests (a typical request's
    time), the step took longer than its schedule, so requests queued."""
    if step.ok < 2 or step.schedule_s <= 0:
        return False
    typical_s = step.end_to_end_ms.get("p50", 0.0) / 1e3
    window = max(step.duration_s - typical_s, step.schedule_s)
    return step.ok / window < SATURATED * step.sent / step.schedule_s


@dataclass(frozen=True, slots=True)
class LoadRun:
    settings: LoadSettings
    steps: tuple[RateStep, ...]
    stop_reason: str

    @property
    def best(self) -> RateStep | None:
        """The busiest step the server kept up with (the last step, if none did)."""
        kept = [s for s in self.steps if s.failed_fraction <= MAX_ERROR_FRACTION and s.ok]
        return (
            max(kept, key=lambda s: s.output_tokens_per_second)
            if kept
            else (self.steps[-1] if self.steps else None)
        )


def check_url(url: str) -> None:
    """Refuse a URL no request can go to (scheme, host, port) in one line, its secrets masked."""
    problem = ""
    try:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            problem = "is not an http(s) URL"
        elif not parts.hostname:
            problem = "has no host"
        else:
            parts.port  # noqa: B018 — raises ValueError for a port outside 0–65535 or not a number
    except ValueError as error:
        problem = f"is not a valid URL ({error})"
    if problem:
        raise PerdollarError(f"--url {mask_url(url)!r} {problem}", "give e.g. http://127.0.0.1:8000/v1")


def rising_load(
    settings: LoadSettings, rates: Sequence[float], report: Callable[[str, float], None] | None = None
) -> LoadRun:
    """Offer each rate in turn until the server fails, falls behind or crosses the TTFT ceiling."""
    check_url(settings.url)
    steps: list[RateStep] = []
    reason = "reached the last rate"
    for index, rate in enumerate(rates):
        if report:
            report(f"{rate:g} requests/s", index / len(rates))
        step = asyncio.run(_step(settings, rate, seed=index))
        steps.append(step)
        if step.failed_fraction > MAX_ERROR_FRACTION:
            reason = f"{step.sent - step.ok} of {step.sent} requests failed at {rate:g} requests/s"
            break
        if _saturated(step):
            reason = f"saturated: {step.completed_rps:.3g} of {rate:g} requests/s completed"
            break
        ceiling = settings.ttft_ceiling_ms
        if ceiling is not None and step.ttft_ms.get("p99", 0.0) > ceiling:
            reason = f"TTFT p99 {step.ttft_ms['p99']:.0f} ms crossed the {ceiling:g} ms ceiling at {rate:g}/s"
            break
    return LoadRun(settings, tuple(steps), reason)


def run_measurement(
    run: LoadRun,
    *,
    started_at: str,
    accelerator_key: str | None = None,
    accelerator_count: int = 0,
    instance_type: str = "unknown",
    precision: str = "unknown",
    workload: tuple[str, str] | None = None,
    engine: str | None = None,
) -> Measurement:
    """The run as a stored measurement: the busiest step kept up with, every step beside it.

    Its rate is output tokens/s of the whole endpoint. ``workload`` (name, fingerprint) is the
    language model perdollar knows the served one as: the run is stored under it, so that its
    serving predictions find it; without one the fingerprint names the served model.
    """
    settings, best = run.settings, run.best
    any_ok = any(step.ok for step in run.steps)
    timeouts = sum(step.timeouts for step in run.steps)
    failed = sum(step.sent - step.ok for step in run.steps)
    status: Status = "ok" if any_ok else ("timeout" if failed and timeouts * 2 >= failed else "error")
    first_failure = next((f for step in run.steps for f in step.failures), "")
    message = "" if any_ok else f"no request succeeded ({run.stop_reason})"
    if message and first_failure:
        message += f"; the first failure: {first_failure}"
    latency: dict[str, float] = {}
    if best is not None:
        for name, figures in (("ttft", best.ttft_ms), ("tpot", best.tpot_ms), ("e2e", best.end_to_end_ms)):
            latency |= {f"{name}_{q}": value for q, value in figures.items()}
    tokens = best.output_tokens_per_second if best is not None and any_ok else None
    host = HostFingerprint(
        cpu_model="remote endpoint",
        cpu_cores=0,
        memory_gib=0.0,
        accelerator=accelerator_key,
        accelerator_key=accelerator_key,
        accelerator_count=accelerator_count,
        driver=None,
        instance_type=instance_type,
        cloud=None,
        versions={"endpoint": mask_url(settings.url)},
    )
    return Measurement(
        status=status,
        mode="inference",
        workload_name=workload[0]
        if workload
        else f"{settings.model} ({settings.input_tokens} → {settings.output_tokens} tokens)",
        workload_fingerprint=workload[1] if workload else llm_endpoint_fingerprint(settings.model),
        batch_size=1,
        precision=precision,
        host=host,
        started_at=started_at,
        samples_per_second=Rate(tokens, tokens, tokens) if tokens else None,
        step_time_ms=latency,
        utilization={
            "unit": "output tokens/s",
            "input_tokens": settings.input_tokens,
            "output_tokens": settings.output_tokens,
            "best_offered_rps": best.offered_rps if best is not None else None,
            "stop_reason": run.stop_reason,
            "served_model": settings.model,
            # The engine the endpoint runs, when the user named it: calibration moves only its predictions.
            "engine": engine,
            "steps": [asdict(step) for step in run.steps],
        },
        warnings=tuple(dict.fromkeys(f for step in run.steps for f in step.failures))[:10],
        message=message,
    )


def llm_endpoint_fingerprint(model: str) -> str:
    return f"llm-serving:{model.strip().lower()}"
