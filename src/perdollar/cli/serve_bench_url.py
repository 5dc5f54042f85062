"""``perdollar serve-bench --url``: load-test a running OpenAI-compatible LLM server and store the result."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from perdollar.cli import common
from perdollar.errors import PerdollarError
from perdollar.measure.serving.openai_load import (
    LoadRun,
    LoadSettings,
    RateStep,
    check_url,
    rising_load,
    run_measurement,
)

if TYPE_CHECKING:
    from perdollar.measure.result import Measurement

DEFAULT_LLM_RATES = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)


def run_url_bench(
    settings: LoadSettings,
    *,
    rates: list[float] | None,
    accelerator: str | None,
    gpus: int,
    precision: str | None,
    store: bool,
    store_url: str | None,
    json_output: bool,
    workload: str | None = None,
    engine: str | None = None,
) -> int:
    """Exit 0 when requests succeeded, 1 when the server ran and failed them all (still recorded)."""
    from perdollar.cli.persist import check_store, save_measurement

    check_url(settings.url)
    if not settings.model.strip():
        raise PerdollarError("serve-bench --url needs --model", "give the model name the server serves")
    known = _known_model(workload, settings.model)
    accelerator_key = None
    if accelerator:
        from perdollar import catalog as catalog_mod

        accelerator_key = catalog_mod.load().accelerator(accelerator).key
    check_store(store_url, enabled=store)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    offered = rates or list(DEFAULT_LLM_RATES)
    with common.progress("serve-bench", total=1.0, quiet=json_output) as bar:
        run = rising_load(
            settings,
            offered,
            report=lambda phase, fraction: bar.update(description=f"offering {phase}", completed=fraction),
        )
    measurement = run_measurement(
        run,
        started_at=started,
        accelerator_key=accelerator_key,
        accelerator_count=gpus if accelerator_key else 0,
        precision=precision or "unknown",
        workload=known,
        engine=engine,
    )
    beyond = _beyond_physics(measurement, known)
    if beyond:
        measurement = dataclasses.replace(measurement, warnings=(*measurement.warnings, beyond))
    stored = save_measurement(measurement, store_url=store_url, enabled=store, source="serve-bench")
    if json_output:
        common.emit_json(
            {"endpoint": settings.shown_endpoint, "model": settings.model, "status": measurement.status,
             "steps": list(run.steps), "stop_reason": run.stop_reason, "best": run.best,
             "measurement_id": stored, "warnings": list(measurement.warnings)},
             table="steps",
        )  # fmt: skip
    else:
        _print_run(run, stored)
        if beyond:
            common.print_warning(beyond)
        if known is None:
            common.err_console.print(
                f"note: perdollar does not know {settings.model!r} as one of its models, so this run "
                "calibrates nothing; name it (`serve-bench llama-3.1-8b --url …`) to calibrate its "
                "serving predictions", highlight=False, markup=False)  # fmt: skip
        elif accelerator_key is None:
            common.err_console.print(
                "note: without --accelerator this run cannot calibrate predictions (which GPU served it?)",
                highlight=False, markup=False)  # fmt: skip
    return 0 if measurement.status == "ok" else 1


def _beyond_physics(measurement: Measurement, known: tuple[str, str] | None) -> str:
    """'' or why the run beats its GPU's physical limit (so it will calibrate nothing), limit named."""
    if known is None or not measurement.host.accelerator_key:
        return ""
    from perdollar import catalog as catalog_mod
    from perdollar.predict.llm_serving.calibrate import impossible_reason, reading_of
    from perdollar.workload.llm import load_llm_workload

    reading = reading_of(measurement)
    chip = catalog_mod.load().accelerators.get(str(measurement.host.accelerator_key))
    if reading is None or chip is None:
        return ""
    arch = load_llm_workload(known[0], kind="inference").architecture
    reason = impossible_reason(reading, arch, chip)
    if not reason:
        return ""
    return (
        f"this run is beyond the physical limit, so it calibrates no prediction: {reason} — is "
        "--accelerator (and --gpus) the hardware that served it, and the model the one named?"
    )


def _known_model(workload: str | None, served: str) -> tuple[str, str] | None:
    """(name, fingerprint) of the language model the endpoint serves, as perdollar knows it."""
    from perdollar.ask.questions import family_of
    from perdollar.workload.llm import load_llm_workload
    from perdollar.workload.llm.workload import reference_for_served_name

    if workload is not None and family_of(workload) != "language-model":
        raise PerdollarError(
            f"{workload!r} is not a language model perdollar knows",
            "name a built-in one (llama-3.1-8b, qwen2.5-7b, …) or a config.json, or leave it out",
        )
    name = workload or reference_for_served_name(served)
    if name is None:
        return None
    model = load_llm_workload(name, kind="inference")
    return model.name, model.fingerprint


def _cell(figures: dict[str, float], quantile: str) -> str:
    value = figures.get(quantile)
    return "–" if value is None else f"{value:,.4g}"


def _print_run(run: LoadRun, stored: str | None) -> None:
    settings = run.settings
    table = Table(
        title=(
            f"{escape(settings.model)} at {escape(settings.shown_endpoint)}: "
            f"{settings.input_tokens} prompt → {settings.output_tokens} output tokens, "
            "Poisson arrivals (latency in ms)"
        ),
        title_justify="left",
    )
    for column in ("offered req/s", "sent", "ok", "failed", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"):
        table.add_column(column, justify="right")
    table.add_column("E2E p99", justify="right")
    table.add_column("output tok/s", justify="right")
    for step in run.steps:
        table.add_row(*_row(step))
    common.print_table(table)
    common.console.print(f"Stopped: {run.stop_reason}.", highlight=False)
    if any(step.failures for step in run.steps):
        first = next(f for step in run.steps for f in step.failures)
        common.console.print(f"[yellow]first failure:[/] {escape(first)}", highlight=False)
    if stored:
        common.console.print(f"[dim]stored as measurement {stored}[/]")


def _row(step: RateStep) -> list[str]:
    return [
        f"{step.offered_rps:g}",
        str(step.sent),
        str(step.ok),
        f"{step.sent - step.ok} ({step.errors} err, {step.timeouts} t/o, {step.dropped} drop)",
        _cell(step.ttft_ms, "p50"),
        _cell(step.ttft_ms, "p99"),
        _cell(step.tpot_ms, "p50"),
        _cell(step.tpot_ms, "p99"),
        _cell(step.end_to_end_ms, "p99"),
        f"{step.output_tokens_per_second:,.4g}",
    ]
