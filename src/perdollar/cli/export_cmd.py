"""``perdollar export``: the launch description another engine needs for one candidate."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

import typer

from perdollar.cli import common
from perdollar.cli.declared import Group, takes
from perdollar.cli.export_options import ExportLaunch
from perdollar.cli.output_files import write_text_file
from perdollar.cli.shared_options import (
    OPTIONS,
    OUTPUT,
    PRECISION_ONLY,
    REGION_ONLY,
    Output,
    Places,
    Step,
    only_one,
)
from perdollar.cli.sweep_render import print_export
from perdollar.errors import PerdollarError

if TYPE_CHECKING:
    from perdollar.jsonable import JsonValue
    from perdollar.launch.export import CandidateSpec

TRAINING_FORMATS = ("torchrun", "skypilot")

EXPORT_HELP = (
    "Write the launch description another engine needs for one candidate (descriptions only: nothing "
    "is launched).\n\n"
    "--format sagemaker: the SageMaker PyTorch estimator settings (spot with max_wait, one subnet so all "
    "instances share an availability zone, torch_distributed) and the equivalent CreateTrainingJob "
    "request. --format ec2: the cluster placement group and the `create_instances` (RunInstances) "
    "parameters, spot market options and EFA interfaces where the instance has them.\n\n"
    "For a language model (--workload): --format torchrun prints each node's torchrun line and the "
    "plan as PERDOLLAR_* variables for the training script, one a concept (PERDOLLAR_SHARDING is the "
    "FSDP ShardingStrategy, PERDOLLAR_ZERO_REDUNDANCY_OPTIMIZER 1 for ZeRO-1, with micro-batch, "
    "accumulation, tensor, pipeline, context and expert degrees, activation checkpointing, CPU "
    "offload, optimizer, precision); --format skypilot prints a SkyPilot task with num_nodes "
    "that runs the same torchrun on every node. The plan is the one in CANDIDATE, or --plan, or "
    "the best the planner finds for the candidate.\n\n"
    "CANDIDATE is a configuration as any command prints it ('2x g5.12xlarge spot (aws us-east-1)') or "
    "an instance name with an optional count, market and region ('4x g5.4xlarge spot @us-west-2').\n\n"
    "Examples:\n\n"
    "  perdollar export g5.12xlarge --format sagemaker\n"
    "  perdollar export '4x g5.4xlarge spot' --format ec2 --region us-east-1\n"
    "  perdollar export '2x p5.48xlarge spot' --format torchrun --workload llama-3.1-8b --script train.py\n"
    "  perdollar export '2x p5.48xlarge' --format skypilot --workload llama-3.1-70b --plan fsdp+ac,tp8 --yaml"
)


@takes(launch=Group(ExportLaunch, panel=OPTIONS), places=REGION_ONLY, step=PRECISION_ONLY, output=OUTPUT)
def export(
    candidate: str = typer.Argument(..., help="e.g. '4x g5.4xlarge spot', 'ml.g5.12xlarge'."),
    fmt: str = typer.Option(..., "--format", "-f", help="sagemaker, ec2, torchrun or skypilot."),
    *,
    launch: ExportLaunch,
    places: Places,
    step: Step,
    output: Output,
) -> int:
    _check_format(fmt)
    region = only_one(places.regions, "--region")
    precision = step.precision
    json_output = output.json_output
    max_run, max_wait, workload, plan = launch.max_run, launch.max_wait, launch.workload, launch.plan
    seq_len, global_batch, script = launch.seq_len, launch.global_batch, launch.script
    as_yaml, out, force = launch.as_yaml, launch.out, launch.force
    import yaml

    from perdollar import catalog as catalog_module
    from perdollar.launch.export import describe_from_catalog, parse_candidate

    parsed = parse_candidate(candidate)
    if fmt in TRAINING_FORMATS:
        training = _training_launch(
            parsed,
            fmt,
            workload=workload,
            plan=plan or parsed.plan,
            region=region,
            seq_len=seq_len,
            global_batch=global_batch,
            precision=precision,
            script=script,
        )
        _emit_training(training, out=out, as_yaml=as_yaml, json_output=json_output, force=force)
        return 0
    description = describe_from_catalog(
        parsed,
        fmt,
        catalog_module.load(),
        region=region,
        max_run_hours=common.parse_duration_hours(max_run, "--max-run"),
        max_wait_hours=common.parse_duration_hours(max_wait, "--max-wait") if max_wait else None,
    )
    if out is not None:
        write_text_file(
            out,
            yaml.safe_dump(description, sort_keys=False)
            if as_yaml or out.suffix in (".yaml", ".yml")
            else json.dumps(description, indent=2),
            "--out",
            overwrite=force,
        )
    if json_output:
        common.emit_json(description)
    else:
        print_export(description, as_yaml=as_yaml)
    return 0


def _check_format(fmt: str) -> None:
    """Refuse a format none of export's paths writes, naming all four (the launch descriptions'
    check knows only its own two)."""
    from perdollar.catalog.names import did_you_mean
    from perdollar.launch.export import FORMATS

    known = (*FORMATS, *TRAINING_FORMATS)
    if fmt not in known:
        near = did_you_mean(fmt, known)
        hint = f"; did you mean {' or '.join(near)}?" if near else ""
        raise PerdollarError(
            f"--format {fmt!r} is not one of {', '.join(known)}{hint}",
            "use sagemaker or ec2 for an AWS launch description, torchrun or skypilot for a training plan",
        )


def _training_launch(candidate: CandidateSpec, fmt: str, *, workload: str | None, plan: str | None,
                     region: str | None, seq_len: int | None, global_batch: int | None, precision: str | None,
                     script: str) -> dict[str, object]:  # fmt: skip
    """The plan for the candidate (fixed or searched) as a torchrun launch or a SkyPilot task."""
    from perdollar.ask.llm_prediction import predict_llm
    from perdollar.ask.questions import PlanFlags
    from perdollar.launch.torchrun import skypilot_training_task, torchrun_description
    from perdollar.question import LanguageModelSettings

    if not workload:
        raise PerdollarError(
            f"--format {fmt} launches a language model's training plan: name it with --workload",
            "e.g. --workload llama-3.1-8b (or a config.json), with --plan to fix the plan",
        )
    settings = LanguageModelSettings(seq_len=seq_len, global_batch=global_batch, plan=plan)
    prediction = predict_llm(workload, candidate.instance_type, candidate.cloud, candidate.count, precision,
                             settings, PlanFlags())  # fmt: skip
    planned = prediction["plan"]
    token = planned.get("token") if isinstance(planned, Mapping) else None  # predict_llm's plan.to_dict()
    if not prediction.get("fits", True):
        raise PerdollarError(
            f"the plan {token} does not fit {candidate.count} × "
            f"{prediction['instance_type']} ({prediction['memory_per_gpu_gib']:.1f} GiB per GPU)",
            "leave out --plan to let the planner choose, or pick a larger candidate",
        )
    chosen_region = region or candidate.region
    label = f"{candidate.label} {token}"
    # predict_llm's document is built of JSON values only (numbers, texts, the plan's to_dict()).
    document = cast("Mapping[str, JsonValue]", prediction)
    description: dict[str, object]
    if fmt == "torchrun":
        description = {**torchrun_description(document, script=script, script_args=[], label=label)}
    else:
        name = f"perdollar-{prediction['workload']}"
        task = skypilot_training_task(document, script=script, script_args=[], spot=candidate.spot,
                                      region=chosen_region, name=name)  # fmt: skip
        description = {"format": "skypilot", "configuration": label, "plan": prediction["plan"],
                       "plan_text": prediction.get("plan_text", ""), "task": task}  # fmt: skip
    description["predicted_tokens_per_second"] = prediction["tokens_per_second"]
    description["memory_per_gpu_gib"] = prediction["memory_per_gpu_gib"]
    return description


def _emit_training(description: Mapping[str, object], *, out: Path | None, as_yaml: bool, json_output: bool,
                   force: bool) -> None:  # fmt: skip
    """The runnable part by default (the node script, the task YAML); the whole description on ask."""
    import yaml

    from perdollar.launch.skypilot import dump_task

    torchrun = description["format"] == "torchrun"
    if torchrun:
        runnable = str(description["script"])
    else:
        task = description["task"]
        if not isinstance(task, dict):
            raise TypeError(f"a SkyPilot description's task is a mapping, not {type(task).__name__}")
        runnable = dump_task(
            task,
            [
                f"perdollar training launch for {description['configuration']}: {description['plan_text']}",
                "launch: sky launch <this file> (sky jobs launch for spot, so preemptions recover)",
            ],
        )
    whole_yaml = yaml.safe_dump(description, sort_keys=False) if as_yaml and torchrun else None
    if out is not None:
        whole = whole_yaml or json.dumps(description, indent=2)
        text = runnable if out.suffix in (".sh", ".yaml", ".yml") else whole
        write_text_file(out, text, "--out", overwrite=force)
    if json_output:
        common.emit_json(description)
    else:
        sys.stdout.write(whole_yaml or runnable)
    common.err_console.print(
        f"{description['configuration']}: {description['plan_text']}; predicted "
        f"{description['predicted_tokens_per_second']:,.0f} tokens/s, "
        f"{description['memory_per_gpu_gib']:.1f} GiB per GPU",
        highlight=False,
        markup=False,
    )


def register(app: typer.Typer) -> None:
    """Add ``export`` to ``app``."""
    app.command("export", help=EXPORT_HELP)(export)
