"""``perdollar recommend`` and ``perdollar compare``: price every candidate and rank by utility."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from perdollar.cli import common
from perdollar.errors import EXIT_OK, PerdollarError

RECOMMEND_HELP = (
    "Which machine should this workload train on? Profile it, predict it on every instance of "
    "every cloud in the catalog (1, 2, 4 … --max-nodes nodes, on-demand and spot), price each "
    "candidate (spot: interruptions, Young/Daly checkpoints, restarts, any node stalls all), and "
    "rank by your objective.\n\n"
    "Objectives: samples-per-dollar (default), time (fastest), cost (cheapest), weighted "
    "(--weights time=1,cost=2). With any objective, --deadline must be met with probability "
    "--confidence and --budget caps the expected cost. Candidates within each other's prediction "
    "bands are marked as ties (≈).\n\n"
    "Examples:\n\n"
    "  perdollar recommend vit-b16 --samples 1e9 --deadline 72h --market any --max-nodes 4\n"
    "  perdollar recommend resnet50 --epochs 90 --dataset-size 1.28M --objective cost --deadline 48h\n"
    "  perdollar recommend bert-base --samples 5e8 --objective time --budget 500 --cloud aws\n"
    "  perdollar recommend vit-b16 --measurements published.csv --json\n"
    "  perdollar recommend resnet50 --inference --qps 200 --p99-ms 50\n\n"
    "Exit codes: 0 ok; 2 bad input; 3 nothing satisfies the constraints (the message says which "
    "one binds and by how much)."
)

COMPARE_HELP = (
    'Compare a shortlist of configurations side by side, hyperfine style: "1.9 ± 0.2 times '
    'cheaper than …" with the reasons (price, throughput and bottleneck, spot losses).\n\n'
    "A configuration is [N x] NAME [spot|on-demand] [@REGION], optionally with a cloud prefix "
    "(gcp:a2-highgpu-1g). Without a region the cheapest region is used.\n\n"
    "Examples:\n\n"
    '  perdollar compare vit-b16 "4x g5.2xlarge spot" "4x g5.4xlarge spot" "1x g5.12xlarge on-demand"\n'
    '  perdollar compare resnet50 "1x p4d.24xlarge spot @us-east-1" "8x g6e.xlarge spot" --samples 1e9'
)


def _quiet_progress(json_output: bool) -> Any:
    return common.progress("recommend", quiet=json_output)


def _target_samples(samples: str | None, epochs: float | None, dataset_size: str | None) -> float | None:
    if samples and epochs is not None:
        raise PerdollarError("give --samples or --epochs, not both", "drop one of them")
    if samples:
        return common.parse_count(samples, "--samples")
    if epochs is not None:
        if not dataset_size:
            raise PerdollarError("--epochs needs --dataset-size", "add --dataset-size N (samples per epoch)")
        if epochs <= 0:
            raise PerdollarError(f"--epochs must be positive, got {epochs}", "give a positive number")
        return epochs * common.parse_count(dataset_size, "--dataset-size")
    if dataset_size:
        raise PerdollarError("--dataset-size needs --epochs", "add --epochs E")
    return None


def _interruption(text: str | None) -> float | None:
    if text is None:
        return None
    from perdollar.price.frame import monthly_fraction_from_text

    try:
        return monthly_fraction_from_text(text)
    except ValueError:
        raise PerdollarError(
            f"--interruption-rate {text!r} is not a monthly fraction",
            "write it like 10% or 0.1 (share of instances interrupted per month)",
        ) from None


def _load_measurements(path: Path | None) -> list[Any]:
    if path is None:
        return []
    if not path.exists():
        raise PerdollarError(
            f"--measurements {path} does not exist", "give a CSV (published schema) or bench JSON"
        )
    try:
        from perdollar.predict.imports import load_measurements_file
    except ImportError:
        return _bench_json(path)
    return list(load_measurements_file(path))


def _bench_json(path: Path) -> list[Any]:
    """perdollar's own bench JSON (one measurement or {"measurements": [...]})."""
    import json

    from perdollar.measure.serialize import measurement_from_dict

    try:
        document = json.loads(path.read_text())
        items = document.get("measurements", [document]) if isinstance(document, dict) else document
        return [measurement_from_dict(item) for item in items]
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise PerdollarError(
            f"--measurements {path} is not perdollar bench JSON ({error})",
            "give the output of perdollar bench --json",
        ) from None


def _profile(workload: str, batch_size: int | None, precision: str | None, say: Any) -> tuple[Any, Any]:
    from perdollar.profile import profile_workload
    from perdollar.workload import load_workload

    spec = load_workload(workload, batch_size=batch_size, precision=precision)
    say(f"profiling {spec.name} (batch {spec.batch_size}, {spec.precision})")
    return spec, profile_workload(spec)


def _measure_here(spec: Any, json_output: bool, store_url: str | None, store: bool) -> list[Any]:
    from perdollar.cli.persist import save_measurement
    from perdollar.measure import run_benchmark

    with common.progress(f"measuring {spec.name} on this machine", quiet=json_output):
        measurement = run_benchmark(spec, mode="cached-input", duration_s=20.0)
    save_measurement(measurement, store_url=store_url, enabled=store)
    if not measurement.ok:
        common.err_console.print(
            f"local measurement {measurement.status}: {measurement.message}; predicting from specs",
            highlight=False,
        )
    return [measurement]


def register(app: typer.Typer) -> None:
    @app.command("recommend", help=RECOMMEND_HELP, no_args_is_help=True)
    def recommend_command(
        workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
        samples: str | None = typer.Option(
            None, "--samples", help="Target samples to process, e.g. 1e9 or 250M."
        ),
        epochs: float | None = typer.Option(None, "--epochs", help="Target epochs (with --dataset-size)."),
        dataset_size: str | None = typer.Option(
            None, "--dataset-size", help="Samples per epoch, e.g. 1.28M."
        ),
        deadline: str | None = typer.Option(
            None, "--deadline", help="Finish within this time, e.g. 72h or 3d."
        ),
        budget: float | None = typer.Option(None, "--budget", help="Expected cost cap in USD."),
        objective: str = typer.Option(
            "samples-per-dollar", "--objective", help="samples-per-dollar | time | cost | weighted."
        ),
        weights: str | None = typer.Option(
            None, "--weights", help="For --objective weighted: time=1,cost=2."
        ),
        confidence: float = typer.Option(0.9, "--confidence", help="Required P(finish by --deadline)."),
        market: str = typer.Option("any", "--market", help="on-demand | spot | any."),
        cloud: list[str] = typer.Option([], "--cloud", help="Allowed cloud (repeatable): aws, gcp, azure."),
        region: list[str] = typer.Option(
            [], "--region", help="Allowed region or pattern (repeatable): us-*."
        ),
        max_nodes: int = typer.Option(
            4, "--max-nodes", help="Largest node count tried (1, 2, 4, … up to it)."
        ),
        batch_size: int | None = typer.Option(None, "--batch-size", help="Per-device batch size."),
        precision: str | None = typer.Option(
            None, "--precision", help="fp32, tf32, amp-bf16, amp-fp16, bf16, fp16."
        ),
        measure: bool = typer.Option(
            False, "--measure", help="Benchmark locally first and calibrate from it."
        ),
        measurements: Path | None = typer.Option(
            None, "--measurements", help="Measured throughput (published CSV schema or bench JSON)."
        ),
        checkpoint_seconds: float | None = typer.Option(
            None, "--checkpoint-seconds", help="Checkpoint write time (default: state size / 250 MB/s + 5 s)."
        ),
        restart_minutes: float | None = typer.Option(
            None, "--restart-minutes", help="Restart after an interruption (default 10)."
        ),
        interruption_rate: str | None = typer.Option(
            None, "--interruption-rate", help="Monthly interruption share for every spot offer, e.g. 10%."
        ),
        top: int = typer.Option(10, "--top", help="Rows to show."),
        show_excluded: bool = typer.Option(
            False, "--show-excluded", help="Also list excluded candidates and why."
        ),
        json_output: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
        store_url: str | None = typer.Option(
            None, "--store", help="Store the result in this SQLAlchemy URL."
        ),
        no_store: bool = typer.Option(False, "--no-store", help="Do not store the result."),
        report: Path | None = typer.Option(None, "--report", help="Also write an HTML report to this file."),
        inference: bool = typer.Option(
            False, "--inference", help="Serving: rank by cost per million requests."
        ),
        qps: float | None = typer.Option(None, "--qps", help="--inference: target requests per second."),
        p99_ms: float | None = typer.Option(None, "--p99-ms", help="--inference: p99 latency SLO (ms)."),
        p95_ms: float | None = typer.Option(None, "--p95-ms", help="--inference: p95 latency SLO (ms)."),
        max_wait_ms: float | None = typer.Option(
            None, "--max-wait-ms", help="--inference: batching wait cap (ms)."
        ),
    ) -> int:
        if inference:
            if qps is None:
                raise PerdollarError("--inference needs --qps", "e.g. --inference --qps 200 --p99-ms 50")
            from perdollar.cli.inference_cmd import recommend_inference

            return recommend_inference(
                workload,
                qps=qps,
                p99_ms=p99_ms,
                p95_ms=p95_ms,
                batch_size=batch_size,
                precision=precision,
                market=market,
                clouds=list(cloud),
                regions=list(region),
                max_wait_ms=max_wait_ms,
                top=top,
                json_output=json_output,
                store_url=store_url,
                store=not no_store,
                report_path=report,
            )
        if top < 1:
            raise PerdollarError(f"--top must be at least 1, got {top}", "give e.g. --top 10")
        target = _target_samples(samples, epochs, dataset_size)
        deadline_hours = common.parse_duration_hours(deadline, "--deadline") if deadline else None
        rate = _interruption(interruption_rate)
        from perdollar.catalog import load as load_catalog
        from perdollar.select.recommend import recommend

        with common.progress("recommend", quiet=json_output) as handle:

            def say(message: str) -> None:
                handle.update(description=message)

            catalog = load_catalog()
            spec, profile = _profile(workload, batch_size, precision, say)
            found = _load_measurements(measurements)
            if measure:
                found += _measure_here(spec, json_output, store_url, not no_store)
            recommendation = recommend(
                workload,
                samples=target,
                deadline_hours=deadline_hours,
                budget_usd=budget,
                objective=objective,
                market=market,
                clouds=cloud,
                regions=region,
                max_nodes=max_nodes,
                catalog=catalog,
                profile=profile,
                measurements=found,
                progress=say,
                weights=weights,
                confidence=confidence,
                checkpoint_seconds=checkpoint_seconds,
                restart_minutes=restart_minutes,
                interruption_rate=rate,
                batch_size=batch_size,
                precision=precision,
                top=top,
            )
        from perdollar.cli.persist import save_recommendation

        stored = save_recommendation(
            recommendation, store_url=store_url, enabled=not no_store, catalog=catalog
        )
        if report is not None:
            from perdollar.report.html import write_report

            write_report(recommendation, report)
        if json_output:
            from perdollar.select.serialize import recommendation_to_dict

            common.emit_json(
                {
                    **recommendation_to_dict(recommendation),
                    "id": stored,
                    "report": str(report) if report else None,
                }
            )
            return EXIT_OK
        from perdollar.report.tables import print_recommendation

        print_recommendation(
            common.console, recommendation, top=top, show_excluded=show_excluded, unit=profile.sample_unit
        )
        if stored:
            common.console.print(f"[dim]stored as {stored}[/]", highlight=False)
        if report is not None:
            common.console.print(f"report written to {report}", highlight=False)
        return EXIT_OK

    @app.command("compare", help=COMPARE_HELP, no_args_is_help=True)
    def compare_command(
        workload: str = typer.Argument(..., help="Built-in name (vit-b16, resnet50, …) or file.py:function."),
        configs: list[str] = typer.Argument(..., help='Configurations, e.g. "4x g5.2xlarge spot".'),
        samples: str | None = typer.Option(None, "--samples", help="Target samples (adds E[time], E[cost])."),
        deadline: str | None = typer.Option(None, "--deadline", help="Adds P(finish by the deadline)."),
        batch_size: int | None = typer.Option(None, "--batch-size", help="Per-device batch size."),
        precision: str | None = typer.Option(
            None, "--precision", help="fp32, tf32, amp-bf16, amp-fp16, bf16, fp16."
        ),
        measurements: Path | None = typer.Option(
            None, "--measurements", help="Measured throughput (published CSV schema or bench JSON)."
        ),
        checkpoint_seconds: float | None = typer.Option(
            None, "--checkpoint-seconds", help="Checkpoint write time."
        ),
        restart_minutes: float | None = typer.Option(
            None, "--restart-minutes", help="Restart time (default 10)."
        ),
        interruption_rate: str | None = typer.Option(
            None, "--interruption-rate", help="Monthly interruption share for every spot offer, e.g. 10%."
        ),
        json_output: bool = typer.Option(False, "--json", help="Machine-readable output on stdout."),
    ) -> int:
        from perdollar.catalog import load as load_catalog
        from perdollar.price.frame import Target
        from perdollar.select.compare import compare_configurations
        from perdollar.select.model import Question
        from perdollar.select.recommend import spot_assumptions

        target_samples = _target_samples(samples, None, None)
        deadline_hours = common.parse_duration_hours(deadline, "--deadline") if deadline else None
        if deadline_hours and not target_samples:
            raise PerdollarError("--deadline needs --samples", "add --samples N")
        with common.progress("compare", quiet=json_output) as handle:
            catalog = load_catalog()
            _spec, profile = _profile(workload, batch_size, precision, lambda m: handle.update(description=m))
            found = [m for m in _load_measurements(measurements) if m.ok]
            calibration = None
            if found:
                from perdollar.predict import Calibration

                calibration = Calibration.from_measurements(profile, found, catalog)
            question = Question(
                workload_name=workload,
                workload_fingerprint=profile.workload_fingerprint,
                kind="train",
                objective="samples-per-dollar",
                options={
                    k: v
                    for k, v in {
                        "checkpoint_seconds": checkpoint_seconds,
                        "restart_minutes": restart_minutes,
                        "interruption_rate": _interruption(interruption_rate),
                    }.items()
                    if v is not None
                },
            )
            assumptions = spot_assumptions(question, profile.memory.weights + profile.memory.optimizer_state)
            handle.update(description="predicting and pricing")
            comparison = compare_configurations(
                configs,
                catalog=catalog,
                profile=profile,
                target=Target(samples=target_samples, deadline_hours=deadline_hours),
                assumptions=assumptions,
                calibration=calibration,
            )
        if json_output:
            common.emit_json(
                {
                    "workload": workload,
                    "catalog_captured_at": str(catalog.captured_at),
                    "comparison": comparison,
                }
            )
            return EXIT_OK
        from perdollar.price.frame import describe_assumptions
        from perdollar.report.tables import comparison_table

        common.console.print(
            comparison_table(
                comparison.estimates,
                comparison.labels,
                unit=profile.sample_unit,
                has_target=bool(target_samples),
                deadline_hours=deadline_hours,
            )
        )
        common.console.print(comparison.summary, highlight=False, markup=False)
        common.console.print(
            f"[dim]{describe_assumptions(assumptions)}; ± from the prediction bands "
            f"(correlated on the same chip) and the spot bucket's width; "
            f"catalog captured {catalog.captured_at}[/]",
            highlight=False,
        )
        return EXIT_OK
