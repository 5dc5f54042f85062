"""Inference: the local latency curve and the cheapest deployment within a latency SLO.

``perdollar bench WORKLOAD --inference`` and ``perdollar recommend WORKLOAD --inference`` call
:func:`bench_inference` and :func:`recommend_inference`; ``perdollar serve-bench`` lives in
:mod:`perdollar.cli.serve_bench_cmd` and is registered from here. Tables are in
:mod:`perdollar.cli.serving_render`.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from perdollar.cli import common, serve_bench_cmd
from perdollar.cli.serving_render import curve_table, deployment_rows, deployment_table, excluded_rows
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.question import Question

if TYPE_CHECKING:
    from perdollar.measure.latency import LatencyCurve
    from perdollar.measure.result import HostFingerprint, Measurement

# --- bench --inference ------------------------------------------------------------------------


def curve_measurement(
    curve: LatencyCurve, host: HostFingerprint, started_at: str, duration_s: float
) -> Measurement:
    """The curve as a :class:`Measurement` (mode ``inference``) so it can be stored and compared."""
    from perdollar.measure.result import Measurement, Rate, Status
    from perdollar.vocabulary import checked_word

    kept_statuses: tuple[Status, ...] = ("ok", "oom", "error", "timeout")
    ok = [p for p in curve.points if p.status == "ok"]
    best = max(ok, key=lambda p: p.samples_per_second) if ok else None
    single = next((p for p in ok if p.concurrency == 1), None)
    status = (
        curve.status if curve.status != "ok" or ok else (curve.points[-1].status if curve.points else "error")
    )
    rate = Rate(best.samples_per_second, best.samples_per_second, best.samples_per_second) if best else None
    return Measurement(
        status=checked_word(status, kept_statuses) if status in kept_statuses else "error",
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
        common.emit_json({"curve": curve, "measurement_id": stored_id}, table="curve.points")
    else:
        if curve.status != "ok" and not curve.points:
            common.console.print(f"[red]{curve.status}[/]: {escape(curve.message)}", highlight=False)
        else:
            common.print_table(curve_table(curve))
            common.console.print(
                f"Stopped: {curve.stop_reason}. Each point: {point_seconds:g} s after warm-up; "
                "latency per request of one batch, closed-loop clients.",
                highlight=False,
            )
            for warning in curve.warnings:
                common.console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        if stored_id:
            common.console.print(f"Stored as measurement {stored_id}.", highlight=False)
    return 0 if measurement.status == "ok" else 1


# --- recommend --inference ----------------------------------------------------------------------


def recommend_inference(
    question: Question,
    *,
    top: int,
    json_output: bool,
    store_url: str | None,
    store: bool,
    report_path: Path | None,
) -> int:
    """Rank deployments by $ per million requests within the SLO; print, store, report."""
    from perdollar.ask import ask_serving
    from perdollar.cli.persist import save_recommendation

    with common.progress("recommend --inference", quiet=json_output) as bar:
        answer = ask_serving(
            question,
            store_url=store_url,
            use_store=store,
            progress=lambda message: bar.update(description=message),
        )
    recommendation, target = answer.recommendation, answer.target
    stored_id = save_recommendation(recommendation, store_url=store_url, enabled=store)
    if report_path is not None:
        from perdollar.report.html import write_report

        write_report(recommendation, report_path)
    rows = deployment_rows(recommendation.estimates, top)
    excluded = excluded_rows(recommendation.estimates)
    if json_output:
        common.emit_json(
            {
                "question": recommendation.question,
                "deployments": rows,
                "excluded": excluded,
                "explanation": recommendation.explanation,
                "serving_mode": {"mode": answer.hint[0], "why": answer.hint[1]},
                "notes": list(recommendation.notes),
                "catalog_captured_at": recommendation.catalog_captured_at,
                "recommendation_id": stored_id,
            },
            table="deployments",
        )
    else:
        if rows:
            common.print_table(deployment_table(rows, target.slo_label, target.qps))
            common.console.print(
                f"P ms: predicted P{round(max(target.slo_ms) * 100)} at {target.headroom:g}× the rate "
                "(in brackets: if every batch ran at the slow edge of the prediction); $/M req in brackets: "
                "replicas sized for that slow edge; "
                "inst.: instances (+ spare instances for spot reclaims); "
                f"prices from the catalog captured {recommendation.catalog_captured_at}.",
                highlight=False,
            )
        common.console.print(recommendation.explanation, highlight=False)
        for note in recommendation.notes:
            common.console.print(f"[dim]{escape(note)}[/]", highlight=False)
        if stored_id:
            common.console.print(f"Stored as recommendation {stored_id}.", highlight=False)
        if report_path is not None:
            common.console.print(f"Report written to {report_path}.", highlight=False)
    if not rows:
        reasons = "; ".join(f"{row['accelerator']}: {row['reason']}" for row in excluded[:3])
        raise NothingFeasibleError(
            f"no deployment serves {target.qps:g} requests/s within {target.slo_label} ({reasons})",
            "relax the SLO, lower --qps, or allow more clouds and markets",
        )
    return 0


def register(app: typer.Typer) -> None:
    """Add ``serve-bench`` (the ``--inference`` modes hang off ``bench`` and ``recommend``)."""
    serve_bench_cmd.register(app)
