"""Inference: the local latency curve, a real HTTP serving check, and the cheapest deployment.

``perdollar bench WORKLOAD --inference`` and ``perdollar recommend WORKLOAD --inference`` call
:func:`bench_inference` and :func:`recommend_inference`; ``perdollar serve-bench`` lives here.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from perdollar.cli import common
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.fmt import format_money

SERVE_BENCH_HELP = (
    "Start a real HTTP model server on 127.0.0.1 and load-test it at rising request rates.\n\n"
    "The server (uvicorn + a small Starlette app) runs one forward pass of WORKLOAD per request on one "
    "model replica. A bounded open-loop client offers Poisson traffic at each rate for --step-seconds and "
    "reports P50/P90/P95/P99 latency, counted from each request's scheduled send time so that queueing in "
    "the server counts, and the achieved rate. It stops when the server falls behind (achieved < 90% of "
    "offered), requests fail, P99 crosses --p99-ceiling-ms, or --max-rps is reached.\n\n"
    "  perdollar serve-bench mlp\n\n"
    "  perdollar serve-bench bert-base --rates 2,5,10 --step-seconds 3\n\n"
    "  perdollar serve-bench mlp --noop --start-rps 500 --max-rps 8000   (the HTTP path alone)"
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
    rates, rate = [], start
    while rate <= stop * (1 + 1e-9) and len(rates) < MAX_RATE_STEPS:
        rates.append(rate)
        rate *= growth
    return rates


def _ms(value: float) -> str:
    if value != value:
        return "–"
    if value == float("inf"):
        return "overload"
    return f"{value:,.0f}" if value >= 1000 else f"{value:.3g}"


# --- bench --inference ------------------------------------------------------------------------


def curve_measurement(curve: Any, host: Any, started_at: str, duration_s: float) -> Any:
    """The curve as a :class:`Measurement` (mode ``inference``) so it can be stored and compared."""
    from perdollar.measure.result import Measurement, Rate

    ok = [p for p in curve.points if p.status == "ok"]
    best = max(ok, key=lambda p: p.samples_per_second) if ok else None
    single = next((p for p in ok if p.concurrency == 1), None)
    status = (
        curve.status if curve.status != "ok" or ok else (curve.points[-1].status if curve.points else "error")
    )
    rate = Rate(best.samples_per_second, best.samples_per_second, best.samples_per_second) if best else None
    return Measurement(
        status=status if status in ("ok", "oom", "error", "timeout") else "error",
        mode="inference",
        workload_name=curve.workload_name,
        workload_fingerprint=curve.workload_fingerprint,
        batch_size=best.batch_size if best else 0,
        precision=curve.precision,
        host=host,
        started_at=started_at,
        samples_per_second=rate,
        step_time_ms=(
            {"p50": single.p50_ms, "p90": single.p90_ms, "p99": single.p99_ms, "mean": single.mean_ms}
            if single
            else {}
        ),
        warnings=tuple(curve.warnings),
        message=curve.message or ("" if ok else curve.stop_reason),
        duration_s=duration_s,
        extra={
            "latency_curve": [common.to_jsonable(p) for p in curve.points],
            "stop_reason": curve.stop_reason,
            "device": curve.device,
        },
    )


def _curve_table(curve: Any) -> Table:
    table = Table(
        title=f"{curve.workload_name} latency curve on this machine ({curve.device}, {curve.precision}); "
        "latency in ms per request of one batch",
        title_justify="left",
    )
    for header in ("batch", "clients", "requests", "P50", "P90", "P95", "P99", "req/s", "samples/s"):
        table.add_column(header, justify="right")
    for p in curve.points:
        if p.status != "ok":
            table.add_row(str(p.batch_size), "–", "–", p.status, "", "", "", "", "")
            continue
        table.add_row(
            str(p.batch_size),
            str(p.concurrency),
            f"{p.requests:,}",
            _ms(p.p50_ms),
            _ms(p.p90_ms),
            _ms(p.p95_ms),
            _ms(p.p99_ms),
            f"{p.requests_per_second:,.0f}",
            f"{p.samples_per_second:,.0f}",
        )
    return table


def bench_inference(
    workload: str,
    *,
    batch_size: int | None,
    precision: str | None,
    duration_s: float | None,
    max_batch: int | None,
    concurrency: list[int] | None,
    p99_ceiling_ms: float | None,
    json_output: bool,
    store_url: str | None,
    store: bool,
    device: str,
) -> int:
    """Measure the local latency curve; print, store; exit 1 when the workload itself failed."""
    import time

    from perdollar.cli.persist import save_measurement
    from perdollar.measure.host import host_fingerprint
    from perdollar.measure.latency import DEFAULT_POINT_SECONDS, measure_latency_curve

    if concurrency is not None and (not concurrency or min(concurrency) < 1):
        raise PerdollarError("--concurrency needs positive client counts", "write it like 1,4,16")
    if max_batch is not None and max_batch < 1:
        raise PerdollarError(f"--max-batch must be at least 1, got {max_batch}", "give e.g. --max-batch 64")
    point_seconds = duration_s if duration_s else DEFAULT_POINT_SECONDS
    start_batch = batch_size or 1
    sizes = None
    if batch_size is not None:
        from perdollar.measure.latency import batch_ladder

        sizes = batch_ladder(start_batch, max_batch)
    started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    began = time.monotonic()
    with common.progress(f"latency curve of {workload}", total=1.0, quiet=json_output) as bar:
        curve = measure_latency_curve(
            workload,
            precision=precision,
            batch_sizes=sizes,
            max_batch=max_batch,
            concurrency=concurrency,
            point_seconds=point_seconds,
            p99_ceiling_ms=p99_ceiling_ms,
            device=device,
            progress=lambda phase, fraction: bar.update(
                description=f"{workload}: {phase}", completed=fraction
            ),
        )
    measurement = curve_measurement(curve, host_fingerprint(), started_at, time.monotonic() - began)
    stored_id = save_measurement(measurement, store_url=store_url, enabled=store)
    if json_output:
        common.emit_json({"curve": curve, "measurement_id": stored_id})
    else:
        if curve.status != "ok" and not curve.points:
            common.console.print(f"[red]{curve.status}[/]: {curve.message}", highlight=False)
        else:
            common.console.print(_curve_table(curve))
            common.console.print(
                f"Stopped: {curve.stop_reason}. Each point: {point_seconds:g} s after warm-up; "
                "latency per request of one batch, closed-loop clients.",
                highlight=False,
            )
            for warning in curve.warnings:
                common.console.print(f"[yellow]warning:[/] {warning}", highlight=False)
        if stored_id:
            common.console.print(f"Stored as measurement {stored_id}.", highlight=False)
    return 0 if measurement.status == "ok" else 1


# --- serve-bench -------------------------------------------------------------------------------


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
    report: Any = None,
) -> tuple[Any, list[Any], str]:
    """Load-test a fresh server at each rate; returns (server info, results, why it stopped)."""
    from perdollar.measure.serving.loadgen import open_loop
    from perdollar.measure.serving.server import running_server

    path, method, body = ("/noop", "GET", b"") if workload is None else ("/predict", "POST", b"{}")
    results: list[Any] = []
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


def _load_table(title: str, results: list[Any]) -> Table:
    table = Table(title=title, title_justify="left")
    for header in ("offered/s", "served/s", "requests", "errors", "P50", "P90", "P95", "P99", "max"):
        table.add_column(header, justify="right")
    for r in results:
        table.add_row(
            f"{r.offered_rps:,.4g}",
            f"{r.achieved_rps:,.4g}",
            f"{r.requests:,}",
            str(r.errors),
            _ms(r.p50_ms),
            _ms(r.p90_ms),
            _ms(r.p95_ms),
            _ms(r.p99_ms),
            _ms(r.max_ms),
        )
    return table


def register(app: typer.Typer) -> None:
    """Add ``serve-bench``."""

    @app.command("serve-bench", help=SERVE_BENCH_HELP, no_args_is_help=True)
    def serve_bench_command(
        workload: str = typer.Argument(..., help="Built-in name (mlp, bert-base, …) or file.py:function."),
        batch_size: int | None = typer.Option(None, "--batch-size", help="Samples per request (default: 1)."),
        precision: str | None = typer.Option(None, "--precision", help="fp32, bf16, amp-bf16, …"),
        rates: str | None = typer.Option(
            None, "--rates", help="Exact rates to offer, e.g. 10,50,100 (req/s)."
        ),
        start_rps: float = typer.Option(5.0, "--start-rps", help="First offered rate (requests/s)."),
        max_rps: float = typer.Option(5000.0, "--max-rps", help="Last offered rate (requests/s)."),
        growth: float = typer.Option(2.0, "--growth", help="Each step offers this many times the last rate."),
        step_seconds: float = typer.Option(2.0, "--step-seconds", help="Seconds of traffic per rate (≤ 60)."),
        p99_ceiling_ms: float | None = typer.Option(
            None, "--p99-ceiling-ms", help="Stop once P99 exceeds this (ms)."
        ),
        connections: int = typer.Option(64, "--connections", help="Keep-alive connections of the client."),
        noop: bool = typer.Option(False, "--noop", help="Load the server's no-op endpoint (no model)."),
        device: str = typer.Option("cpu", "--device", help="cpu, cuda, auto."),
        json_output: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
    ) -> int:
        if not 0 < step_seconds <= 60:
            raise PerdollarError(
                f"--step-seconds must be in (0, 60], got {step_seconds:g}", "e.g. --step-seconds 2"
            )
        if not 1 <= connections <= 1024:
            raise PerdollarError(f"--connections must be 1–1024, got {connections}", "e.g. --connections 64")
        offered = _parse_rates(rates) or rate_ladder(start_rps, max_rps, growth)
        with common.progress("serve-bench", total=1.0, quiet=json_output) as bar:
            bar.update(description=f"starting the server for {workload}")
            server, results, reason = run_serve_bench(
                None if noop else workload,
                rates=offered,
                step_seconds=step_seconds,
                batch_size=1 if batch_size is None and not noop else batch_size,
                precision=precision,
                device=device,
                connections=connections,
                p99_ceiling_ms=p99_ceiling_ms,
                report=lambda phase, fraction: bar.update(
                    description=f"offering {phase}", completed=fraction
                ),
            )
        target = "no-op endpoint" if noop else f"{workload} at batch {server.batch_size} per request"
        if json_output:
            common.emit_json(
                {
                    "workload": None if noop else workload,
                    "in_process_forward_ms": None if noop else server.forward_ms,
                    "batch_size": server.batch_size,
                    "endpoint": "/noop" if noop else "/predict",
                    "steps": results,
                    "stop_reason": reason,
                }
            )
            return 0
        common.console.print(
            _load_table(
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
        return 0


# --- recommend --inference ----------------------------------------------------------------------

MARKETS = {"any": ("on-demand", "spot"), "on-demand": ("on-demand",), "spot": ("spot",)}


Curve = dict[int, tuple[float, float, float]]


def _measured_curves(
    fingerprint: str, store_url: str | None
) -> tuple[dict[str, Curve], tuple[float, Curve] | None]:
    """Stored local latency curves of this workload: by accelerator key, and the latest CPU host's."""
    from perdollar.cli.persist import stored_measurements

    curves: dict[str, Curve] = {}
    cpu: tuple[float, Curve] | None = None
    for measurement in stored_measurements(fingerprint, store_url=store_url):
        if measurement.mode != "inference" or not measurement.ok:
            continue
        points: Curve = {}
        for point in measurement.extra.get("latency_curve", []):
            if point.get("concurrency") == 1 and point.get("status") == "ok":
                points[int(point["batch_size"])] = (
                    point["p50_ms"] / 1e3,
                    point["min_ms"] / 1e3,
                    point["p90_ms"] / 1e3,
                )
        key = getattr(measurement.host, "accelerator_key", None)
        if key:
            curves[key] = points
        elif points and measurement.extra.get("device", "cpu") == "cpu":
            cpu = (float(measurement.host.cpu_cores), points)
    return curves, cpu


def _deployment_rows(frame: Any, top: int) -> list[dict[str, Any]]:
    keep = [
        "cloud",
        "instance_type",
        "region",
        "market",
        "accelerator_key",
        "accelerator_count",
        "instances",
        "spot_extra_instances",
        "replicas",
        "batch",
        "max_wait_ms",
        "latency_ms",
        "latency_high_ms",
        "capacity_per_replica",
        "rate_per_replica",
        "utilisation",
        "price_per_hour",
        "deployment_price_per_hour",
        "usd_per_million_requests",
        "usd_per_million_requests_high",
        "basis",
        "interruption_bucket",
        "captured_at",
    ]
    feasible = frame[frame["feasible"]].drop_duplicates(["cloud", "instance_type", "market"]).head(top)
    return [{k: row.get(k) for k in keep} for row in feasible.to_dict("records")]


def _excluded_rows(frame: Any) -> list[dict[str, Any]]:
    excluded = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    return [
        {
            "accelerator": row["accelerator_key"] or "(CPU)",
            "example_instance": row["instance_type"],
            "reason": row["excluded_reason"],
        }
        for row in excluded.to_dict("records")
    ]


def _deployment_table(rows: list[dict[str, Any]], label: str, qps: float) -> Table:
    table = Table(title=f"Cheapest deployments for {qps:g} requests/s ({label})", title_justify="left")
    for header in (
        "#",
        "instance",
        "cloud / region",
        "market",
        "accel.",
        "inst.",
        "replicas",
        "batch",
        "wait ms",
        "P ms (band)",
        "req/s per replica",
        "$/h",
        "$/M req (band)",
        "basis",
    ):
        table.add_column(header, justify="right" if header not in ("instance", "cloud / region") else "left")
    for rank, row in enumerate(rows, 1):
        count = row["accelerator_count"] or 0
        accel = f"{count:g}× {row['accelerator_key']}" if row["accelerator_key"] else "CPU"
        spot_extra = f" (+{row['spot_extra_instances']})" if row["spot_extra_instances"] else ""
        table.add_row(
            str(rank),
            row["instance_type"],
            f"{row['cloud']} {row['region']}",
            row["market"],
            accel,
            f"{row['instances']}{spot_extra}",
            str(row["replicas"]),
            str(row["batch"]),
            f"{row['max_wait_ms']:.2g}",
            f"{_ms(row['latency_ms'])} ({_ms(row['latency_high_ms'])})",
            f"{row['capacity_per_replica']:,.0f}",
            format_money(row["deployment_price_per_hour"]),
            f"{row['usd_per_million_requests']:.3g} ({row['usd_per_million_requests_high']:.3g})",
            row["basis"],
        )
    return table


def recommend_inference(
    workload: str,
    *,
    qps: float,
    p99_ms: float | None,
    p95_ms: float | None,
    batch_size: int | None,
    precision: str | None,
    market: str,
    clouds: list[str],
    regions: list[str],
    max_wait_ms: float | None,
    top: int,
    json_output: bool,
    store_url: str | None,
    store: bool,
    report_path: Path | None,
) -> int:
    """Rank deployments by $ per million requests within the SLO; print, store, report."""
    from perdollar.cli.persist import save_recommendation
    from perdollar.select.serving import ServingTarget, recommend_serving
    from perdollar.workload import load_workload

    if qps <= 0:
        raise PerdollarError(f"--qps must be positive, got {qps:g}", "give the target rate, e.g. --qps 400")
    if p99_ms is None and p95_ms is None:
        raise PerdollarError("--inference needs a latency SLO", "add --p99-ms 50 (or --p95-ms)")
    if any(v is not None and v <= 0 for v in (p99_ms, p95_ms, max_wait_ms)):
        raise PerdollarError("latency limits must be positive", "e.g. --p99-ms 50 --max-wait-ms 5")
    if market not in MARKETS:
        raise PerdollarError(f"--market {market!r} is not a market", "use on-demand, spot or any")
    if top < 1:
        raise PerdollarError(f"--top must be at least 1, got {top}", "give e.g. --top 10")
    slo = {q: ms for q, ms in ((0.99, p99_ms), (0.95, p95_ms)) if ms is not None}
    target = ServingTarget(
        qps=qps,
        slo_ms=slo,
        max_wait_ms=max_wait_ms,
        markets=MARKETS[market],
        clouds=tuple(c.lower() for c in clouds),
        regions=tuple(regions),
        max_batch=batch_size,
    )
    spec = load_workload(workload, batch_size=batch_size, precision=precision, kind="inference")
    with common.progress("recommend --inference", quiet=json_output) as bar:
        measured, cpu_measured = _measured_curves(spec.with_overrides(batch_size=1).fingerprint, store_url)
        answer = recommend_serving(
            spec,
            target,
            measured=measured,
            cpu_measured=cpu_measured,
            progress=lambda message: bar.update(description=message),
        )
    recommendation = answer.recommendation
    stored_id = save_recommendation(recommendation, store_url=store_url, enabled=store)
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path)
    rows = _deployment_rows(answer.frame, top)
    excluded = _excluded_rows(answer.frame)
    if json_output:
        common.emit_json(
            {
                "question": recommendation.question,
                "deployments": rows,
                "excluded": excluded,
                "explanation": recommendation.explanation,
                "serving_mode": {"mode": answer.hint[0], "why": answer.hint[1]},
                "catalog_captured_at": recommendation.catalog_captured_at,
                "recommendation_id": stored_id,
            }
        )
    else:
        if rows:
            common.console.print(_deployment_table(rows, target.slo_label, qps))
            common.console.print(
                f"P ms: predicted P{round(max(slo) * 100)} at {target.headroom:g}× the rate "
                "(in brackets: if every batch ran at the slow edge of the prediction); $/M req in brackets: "
                "replicas sized for that slow edge; "
                "inst.: instances (+ spare instances for spot reclaims); "
                f"prices from the catalog captured {recommendation.catalog_captured_at}.",
                highlight=False,
            )
        common.console.print(recommendation.explanation, highlight=False)
        if stored_id:
            common.console.print(f"Stored as recommendation {stored_id}.", highlight=False)
        if report_path is not None:
            common.console.print(f"Report written to {report_path}.", highlight=False)
    if not rows:
        reasons = "; ".join(f"{row['accelerator']}: {row['reason']}" for row in excluded[:3])
        raise NothingFeasibleError(
            f"no deployment serves {qps:g} requests/s within {target.slo_label} ({reasons})",
            "relax the SLO, lower --qps, or allow more clouds and markets",
        )
    return 0
