"""`perdollar predict` and `perdollar validate`: throughput on an instance, and the proof of accuracy."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from perdollar.ask.questions import PlanFlags
from perdollar.catalog.model import InstanceType
from perdollar.cli.common import console, emit_json, err_console, print_table, progress
from perdollar.cli.declared import LANGUAGE_MODEL_PANELS, Group, StoreChoice, takes
from perdollar.cli.predict_options import PredictionTarget, ValidationTargets
from perdollar.cli.shared_options import (
    CLOUD_ONLY,
    MEASURED,
    OPTIONS,
    OUTPUT,
    STEP,
    Measured,
    Output,
    Places,
    Step,
    only_one,
)
from perdollar.fmt import format_band, format_number
from perdollar.predict.model import Prediction
from perdollar.profile.model import Profile
from perdollar.question import LanguageModelSettings

PREDICT_HELP = """Predict a workload's training (or inference) throughput on an instance type.

The workload is traced (no compute), each operator is timed on the instance's accelerator by a
roofline with efficiencies fitted on published measurements, and the data-parallel all-reduce
over the slowest link (NVLink/PCIe inside a host, the network between hosts) is added. Stored
or imported measurements of the same workload calibrate the prediction. Every figure carries
its basis (measured, calibrated or spec), an 80% band from the errors observed on GPUs held out
of the fit, and the bottleneck.

  perdollar predict vit-b16 --instance g5.2xlarge
  perdollar predict vit-b16 --instance p4d.24xlarge --nodes 2 --json
  perdollar predict resnet50 --instance g5.12xlarge --measurements bench.json

A language model (a built-in name such as llama-3.1-8b, or a Hugging Face config.json) is
predicted in tokens: the best training plan is searched (sharding strategy, tensor and pipeline
parallelism, activation checkpointing, micro-batch) unless --plan fixes it.

  perdollar predict llama-3.1-8b --instance p5.48xlarge --seq-len 4096 --global-batch 256
  perdollar predict config.json --instance p4d.24xlarge --nodes 2 --plan fsdp --micro-batch 2 --json
"""

VALIDATE_HELP = """Check perdollar's predictions against published measurements made by others.

FILE is a CSV of published figures, one a row, with the columns source, model, task, gpu,
gpu_count, precision, batch_size, batch_scope, seq_len, throughput, unit, metric,
throughput_scope and notes (flag, framework and system are read where present). Without FILE,
the sample shipped with perdollar is read: 42 rows of NVIDIA DeepLearningExamples' ResNet-50
v1.5 tables on four GPUs, each naming its source. Rows are paired inside one source and software
era (same model, task, precision, per-GPU batch and sequence length; different GPU); each target
row is predicted from its anchor (calibrated) and from specs alone. Where the anchor's GPU has
rows at three or more batch sizes, the host time they show (a step that stays flat as the batch
grows) is kept as a floor under the target. With --target-gpus, only rows whose gpu value is in
the list are targets, and the figures are held out: where the shipped parameters were fitted on
rows of a target GPU from one of the file's sources (the development set itself), they are first
refitted without the target GPUs, unless --no-refit; a file of new measurements is predicted
with the shipped parameters as they are. The JSON's "fit" says which. Multi-GPU rows, and rows
whose flag column doubts the figure itself ("anomalous: …", "suspect: …"), are neither anchors
nor targets; the output counts them under "left out". When a naive baseline (the anchor's figure
scaled by a ratio of memory bandwidths, of peak FLOPS, or their geometric mean) has a lower
median error than perdollar on the file's pairs, the output says so.

  perdollar validate --target-gpus T4
  perdollar validate --target-gpus T4,V100-SXM2-16GB --json
  perdollar validate my_measurements.csv
"""


def _reflow(text: str) -> str:
    """Join wrapped lines of each paragraph (the terminal re-wraps them); keep example lines as they are."""
    out: list[str] = []
    for paragraph in text.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if all(line.startswith("  ") for line in lines):
            out.append("\n\n".join(line.strip() for line in lines))
        else:
            out.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(out)


def _bar(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


@takes(
    target=Group(PredictionTarget, panel=OPTIONS),
    language_model=Group(LanguageModelSettings, ("training", "serving"), scope_panels=LANGUAGE_MODEL_PANELS),
    plan_flags=Group(PlanFlags, panel="Language model: plan"),
    store=StoreChoice,
    places=CLOUD_ONLY,
    step=STEP,
    output=OUTPUT,
    measured=MEASURED,
)
def predict_command(
    workload: str = typer.Argument(
        ..., help="Built-in workload name, path/to/file.py:function, or an LLM's config.json."
    ),
    *,
    target: PredictionTarget,
    language_model: LanguageModelSettings,
    plan_flags: PlanFlags,
    store: StoreChoice,
    places: Places,
    step: Step,
    output: Output,
    measured: Measured,
) -> None:
    measurements = measured.measurements
    cloud = only_one(places.clouds, "--cloud")
    batch_size = step.batch_size
    precision = step.precision
    json_output = output.json_output
    from perdollar.ask.predicting import (
        PredictionAsked,
        Reach,
        predict_configuration,
        refuse_a_misplaced_load,
    )

    asked = PredictionAsked(
        workload, instance=target.instance, nodes=target.nodes, cloud=cloud, batch_size=batch_size,
        precision=precision, inference=target.inference, accelerator=target.accelerator, gpus=target.gpus,
        settings=language_model, flags=plan_flags, measurements_file=measurements,
        data_bytes_per_sample=target.data_bytes_per_sample, input_rate_per_core=target.input_rate_per_core,
        concurrency=target.concurrency, requests_per_second=target.rps,
    )  # fmt: skip
    refuse_a_misplaced_load(asked)
    # A served language model is predicted in well under a second: no progress line to clear.
    quiet = json_output or (asked.family == "language-model" and asked.inference)
    with progress(f"predicting {workload}", quiet=quiet) as bar:
        reach = Reach(
            store.store_url, store.enabled, progress=lambda message: bar.update(description=message),
            note=lambda message: err_console.print(message, markup=False),
        )  # fmt: skip
        answer = predict_configuration(asked, reach)
    _render(answer, json_output)


def _render(answer: object, json_output: bool) -> None:
    """Each route's figures as the command prints them (the routes return three kinds of record)."""
    from perdollar.ask.llm_serving_prediction import LanguageModelServingPrediction
    from perdollar.ask.network_prediction import NetworkPrediction

    if isinstance(answer, LanguageModelServingPrediction):
        from perdollar.cli.llm_serving_render import prediction_document, print_prediction

        parts = (answer.architecture, answer.accelerator, answer.gpus, answer.replicas, answer.work)
        if json_output:
            figures = (*parts, answer.result, answer.worth, answer.bands)
            emit_json(prediction_document(*figures, load=answer.load))
        else:
            print_prediction(console, *parts, answer.result, answer.worth, answer.bands, load=answer.load)
    elif isinstance(answer, NetworkPrediction):
        if json_output:
            emit_json(
                {
                    "workload": answer.name,
                    "fingerprint": answer.profile.workload_fingerprint,
                    "batch_size_per_device": answer.profile.batch_size,
                    "precision": answer.profile.precision,
                    "sample_unit": answer.profile.sample_unit,
                    "cloud": answer.instance.cloud,
                    "prediction": answer.prediction,
                    "calibration_anchors": list(answer.calibration_anchors),
                }
            )
        else:
            _print_prediction(answer.name, answer.profile, answer.instance, answer.prediction)
    else:  # a language model's training: the document itself
        from perdollar.cli.llm_render import print_llm_prediction

        if json_output:
            emit_json(answer)
        else:
            assert isinstance(answer, dict), "a language model's training prediction is its document"
            print_llm_prediction(answer)


@takes(targets=Group(ValidationTargets, panel=OPTIONS), output=OUTPUT)
def validate_command(
    file: Path | None = typer.Argument(
        None, help="CSV of published figures (the columns below; default: the shipped sample)."
    ),
    *,
    targets: ValidationTargets,
    output: Output,
) -> None:
    json_output = output.json_output
    target_gpus, refit = targets.target_gpus, targets.refit
    from perdollar import catalog as catalog_mod
    from perdollar.files import checked_user_file
    from perdollar.predict.lab.validate import run_validation
    from perdollar.predict.published import PUBLISHED_MAX_BYTES, SAMPLE_CSV

    if file is not None:
        fix = "give a CSV in the columns validate --help lists"
        checked_user_file(file, "the CSV", PUBLISHED_MAX_BYTES, fix)
    else:
        file = SAMPLE_CSV
    gpus = [g.strip() for g in target_gpus.split(",") if g.strip()] if target_gpus else None
    with progress("pairing, fitting and predicting", quiet=json_output):
        result = run_validation(file, catalog_mod.load(), gpus, refit=refit)
    if json_output:
        emit_json(result)
        return
    _print_validation(result if file != SAMPLE_CSV else {**result, "file": "perdollar's shipped sample"})


def _print_prediction(name: str, profile: Profile, instance: InstanceType, p: Prediction) -> None:
    unit = profile.sample_unit
    devices = p.nodes * max(p.accelerators_per_node, 1)
    console.print(
        f"[bold]{escape(name)}[/] on {p.nodes} × {instance.cloud} {p.instance_type} "
        f"({p.accelerator_key or 'CPU'}, "
        f"{devices:g} device(s), batch {profile.batch_size} per device, {profile.precision})"
    )
    band = format_band(p.samples_per_second, p.samples_per_second_low, p.samples_per_second_high, unit + "/s")
    console.print(f"throughput: {band}  [dim](80% band; basis: {p.basis})[/]")
    console.print(
        f"bottleneck: {p.bottleneck} · step {format_number(p.step_time_s * 1e3)} ms = device "
        f"{format_number(p.compute_time_s * 1e3)} ms + exposed all-reduce "
        f"{format_number(p.communication_time_s * 1e3)} ms"
    )
    fit = (p.fit_reason or "fits") if p.fits else f"does NOT fit: {p.fit_reason}"
    if p.max_batch_that_fits:
        fit += f" (largest batch that fits ≈ {p.max_batch_that_fits})"
    console.print(f"memory: {fit}")
    if p.precision_remark:
        console.print(f"precision: {escape(p.precision_remark)}")
    if p.excluded_reason:
        console.print(f"[yellow]excluded:[/] {escape(p.excluded_reason)}")
    if p.breakdown_s:
        table = Table(title="Device step time by operator class (ms, one device)", title_justify="left")
        table.add_column("class")
        table.add_column("time (ms)", justify="right")
        table.add_column("share", justify="right")
        total = sum(p.breakdown_s.values()) or 1.0
        for cls, seconds in sorted(p.breakdown_s.items(), key=lambda kv: -kv[1]):
            table.add_row(cls, format_number(seconds * 1e3), f"{100 * seconds / total:.0f}%")
        print_table(table)


def _print_validation(result: dict) -> None:
    console.print(
        f"{result['file']}: {result['pairs']} anchor→target pairs · targets: {result['target_gpus']} · "
        f"{result['fit']}"
    )
    table = Table(title="Absolute percentage error of throughput", title_justify="left")
    for column in ("predictor", "n", "median", "mean", "≤10%", "≤25%"):
        table.add_column(column, justify="left" if column == "predictor" else "right")
    named = [
        ("calibrated (reference workloads)", result["calibrated"]),
        ("spec only (reference workloads)", result["spec_only"]),
        ("calibrated (fallback profile)", result["fallback"]["calibrated"]),
        ("calibrated (all rows)", result["calibrated_all"]),
    ]
    named += [(f"baseline: {k.replace('_', ' ')}", v) for k, v in result.get("baselines", {}).items()]
    for label, s in named:
        table.add_row(
            label,
            str(s["n"]),
            _bar(s["median_ape"]),
            _bar(s["mean_ape"]),
            _bar(s["within_10pct"]),
            _bar(s["within_25pct"]),
        )
    print_table(table)
    rho, cov = result["spearman"], result["coverage"]
    rho_text = "n/a" if rho["mean"] is None else f"{rho['mean']:.3f}"
    console.print(
        f"GPU rank correlation per workload (Spearman): {rho_text} over {rho['workloads']} workloads · "
        f"coverage: {_bar(cov['fraction'])} ({cov['predicted_rows']}/{cov['candidate_rows']} rows) · "
        f"{result['seconds']} s"
    )
    _print_beaten_by(result)
    if "llm_serving" in result:
        _print_llm_serving(result["llm_serving"])
    left = result.get("left_out", {})
    if any(left.values()):
        console.print(
            "[dim]left out: "
            + ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in left.items() if n)
            + "[/]"
        )


def _print_beaten_by(result: dict) -> None:
    """One line when a naive baseline predicts this file better than perdollar does."""
    beaten_by = result.get("beaten_by") or []
    if not beaten_by:
        return
    naive = result["baselines"]
    named = " and ".join(
        f"{name.replace('_', ' ')} ({_bar(naive[name]['median_ape'])})" for name in beaten_by
    )
    console.print(
        f"[yellow]A naive baseline beats perdollar on this file:[/] {named} "
        f"{'has' if len(beaten_by) == 1 else 'have'} a lower median error than perdollar's "
        f"{_bar(result['calibrated_all']['median_ape'])} (calibrated, all rows) on the same "
        f"{result['calibrated_all']['n']} pairs",
        highlight=False,
        soft_wrap=True,
    )


def _print_llm_serving(section: dict) -> None:
    table = Table(
        title=f"LLM serving rows ({section['rows']}): held out (GPU left out of the fit) vs plain roofline",
        title_justify="left",
    )
    for column in ("kind", "n", "median", "mean", "≤10%", "roofline median"):
        table.add_column(column, justify="left" if column == "kind" else "right")
    for kind, s in section["held_out"].items():
        if s["n"]:
            roof = section["plain_roofline"][kind]
            table.add_row(
                kind, str(s["n"]), _bar(s["median_ape"]), _bar(s["mean_ape"]), _bar(s["within_10pct"]),
                _bar(roof["median_ape"]),
            )  # fmt: skip
    print_table(table)


def register(app: typer.Typer) -> None:
    """Add ``predict`` and ``validate`` to ``app``."""
    app.command("predict", help=_reflow(PREDICT_HELP))(predict_command)
    app.command("validate", help=_reflow(VALIDATE_HELP))(validate_command)
