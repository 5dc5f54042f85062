"""From a ranked candidate to a benchmark job: resources, setup and run scripts, caps."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from perdollar.launch.spec import (
    DEFAULT_BENCH_DURATION_S,
    DEFAULT_OVERHEAD_SECONDS,
    RESULT_BEGIN,
    RESULT_END,
    BenchmarkJob,
    JobResources,
    bench_duration,
    derive_caps,
    job_name,
)
from perdollar.launch.wheel import remote_path
from perdollar.measure.result import Mode
from perdollar.predict.llm.plan import parse_plan
from perdollar.price.model import Estimate

MASTER_PORT = 29500


@dataclass(frozen=True, slots=True)
class JobOptions:
    """How every job of one sweep is built (the same for all candidates)."""

    workload: str
    batch_size: int | None = None
    precision: str | None = None
    mode: Mode = "cached-input"
    duration_s: float = DEFAULT_BENCH_DURATION_S
    max_dollars_per_run: float | None = None
    overhead_seconds: float = DEFAULT_OVERHEAD_SECONDS
    max_steps: int | None = None
    install: str = ""  # pip requirement for perdollar on the node; "" = the wheel below
    wheel: str | None = None  # a wheel of this checkout, mounted on the node (launch.wheel)
    requirements: str | None = None  # the user's requirements file (relative to workdir)
    workdir: str | None = None
    remote_store_url: str | None = None


def setup_script(options: JobOptions) -> str:
    """Install perdollar from the shipped wheel (or ``--install``) and the user's dependencies.

    ``PERDOLLAR_SKIP_INSTALL`` is set where perdollar is already the one to run (the local
    executor runs jobs in this very environment).
    """
    if options.wheel:
        requirement = f'"$HOME/{remote_path(Path(options.wheel)).removeprefix("~/")}"'
    elif options.install:
        requirement = shlex.quote(options.install)
    else:
        requirement = ""
    lines = ["set -e"]
    if requirement:
        lines += [
            'if [ -z "${PERDOLLAR_SKIP_INSTALL:-}" ]; then',
            f"  python3 -m pip install -q {requirement}",
            # NVML for GPU utilisation and power, where there is a GPU to read.
            "  if command -v nvidia-smi >/dev/null 2>&1; then",
            "    python3 -m pip install -q 'nvidia-ml-py>=12'",
            "  fi",
            "fi",
        ]
    if options.requirements:
        lines.append(f"python3 -m pip install -q -r {shlex.quote(options.requirements)}")
    return "\n".join(lines) + "\n"


# What bench's FSDP runs can stand in for: ZeRO-1 has no FSDP mode (SHARD_GRAD_OP is the nearest)
# and HSDP on one host is FULL_SHARD. A run calibrates whatever plan it ran (the measurement says
# which), so a nearby plan is still a valid point.
_BENCH_STRATEGY = {"ddp": "ddp", "zero1": "zero2", "zero2": "zero2", "fsdp": "fsdp", "hsdp": "fsdp"}


def bench_plan(token: str) -> str:
    """The ``bench --plan`` nearest a candidate's training plan ('' when it has none).

    bench shards over one host's processes: tensor and pipeline parallelism and LoRA are not run,
    so such a plan is measured as FSDP full-shard at its micro-batch.
    """
    if not token:
        return ""
    plan = parse_plan(token)
    runnable = plan.tensor_parallel == 1 and plan.pipeline_parallel == 1 and plan.finetune == "full"
    strategy = _BENCH_STRATEGY[plan.strategy] if runnable else "fsdp"
    checkpointing = "+ac" if plan.activation_checkpointing else ""
    micro_batch = f",mb{plan.micro_batch}" if plan.micro_batch != 1 else ""
    return f"{strategy}{checkpointing}{micro_batch}"


def bench_arguments(
    options: JobOptions, duration_s: float, resources: JobResources, plan: str = ""
) -> list[str]:
    args = ["bench", options.workload, "--json", "--mode", options.mode, "--duration", f"{duration_s:g}"]
    if plan:
        args += ["--plan", plan]
    if options.batch_size is not None:
        args += ["--batch-size", str(options.batch_size)]
    if options.precision is not None:
        args += ["--precision", options.precision]
    if resources.accelerators_per_node > 1 or resources.num_nodes > 1:
        args += ["--nproc", str(max(1, resources.accelerators_per_node))]
    # A shared store's URL carries its password: it reaches the node as the secret spec.STORE_SECRET
    # (which `perdollar bench` reads as its store), never as text in the task file or a command line.
    if not options.remote_store_url:
        args.append("--no-store")
    return args


def run_script(
    options: JobOptions, duration_s: float, max_seconds: float, resources: JobResources, plan: str = ""
) -> str:
    """The benchmark command under its time cap, its JSON result framed in the log.

    The result travels back in the job's log between two marker lines, so every engine that
    can stream a log (SkyPilot, a subprocess) can fetch it without extra storage.
    """
    bench = " ".join(shlex.quote(a) for a in bench_arguments(options, duration_s, resources, plan))
    lines = ["set -u", 'PERDOLLAR_CMD="${PERDOLLAR_BIN:-perdollar}"', 'result_file="$(mktemp)"']
    if resources.num_nodes > 1:
        # torch.distributed rendezvous over the co-located nodes (rank 0's address first).
        lines += [
            'export MASTER_ADDR="$(echo "$SKYPILOT_NODE_IPS" | head -n1)"',
            f"export MASTER_PORT={MASTER_PORT}",
            'export NNODES="$SKYPILOT_NUM_NODES" NODE_RANK="$SKYPILOT_NODE_RANK"',
        ]
    lines += [
        f'timeout --kill-after=20 {int(max_seconds)} $PERDOLLAR_CMD {bench} > "$result_file"',
        "status=$?",
        'if [ "${SKYPILOT_NODE_RANK:-0}" = "0" ]; then',
        f'  echo "{RESULT_BEGIN}"; cat "$result_file"; echo; echo "{RESULT_END} exit=$status"',
        "fi",
        'rm -f "$result_file"',
        "exit $status",
    ]
    return "\n".join(lines) + "\n"


def job_for_estimate(
    estimate: Estimate,
    index: int,
    options: JobOptions,
    *,
    accelerator_name: str | None = None,
    zone: str | None = None,
) -> BenchmarkJob:
    """The job that measures ``options.workload`` on the candidate ``estimate``.

    ``accelerator_name`` is the cloud catalog's name for the chip (SkyPilot's vocabulary);
    without it the accelerator key of the estimate is used.
    """
    accelerator = accelerator_name or estimate.accelerator
    resources = JobResources(
        cloud=estimate.cloud,
        region=estimate.region,
        zone=zone,
        instance_type=estimate.instance_type,
        accelerator=accelerator,
        accelerator_count=estimate.accelerators_per_node if accelerator else 0.0,
        use_spot=estimate.market == "spot",
        num_nodes=max(1, estimate.nodes),
    )
    caps = derive_caps(
        estimate.price_per_hour,
        duration_s=options.duration_s,
        max_dollars=options.max_dollars_per_run,
        overhead_seconds=options.overhead_seconds,
        max_steps=options.max_steps,
    )
    duration = bench_duration(caps, options.duration_s)
    envs: dict[str, str] = {"PERDOLLAR_CANDIDATE": estimate.label}
    if options.max_steps is not None:
        envs["PERDOLLAR_MAX_STEPS"] = str(options.max_steps)
    return BenchmarkJob(
        name=job_name(estimate.label, index),
        candidate=estimate.label,
        workload=options.workload,
        resources=resources,
        caps=caps,
        setup=setup_script(options),
        run=run_script(options, duration, caps.max_seconds, resources, bench_plan(estimate.plan)),
        duration_s=duration,
        batch_size=options.batch_size,
        precision=options.precision,
        mode=options.mode,
        envs=envs,
        workdir=str(Path(options.workdir).resolve()) if options.workdir else None,
        store_url=options.remote_store_url,
        file_mounts={remote_path(Path(options.wheel)): options.wheel} if options.wheel else {},
    )
