"""``perdollar bench``'s help and the options it declares once here (generated onto the command by
:func:`perdollar.cli.declared.takes`): how a command's output is read, and the serving curve."""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.question import declared
from perdollar.vocabulary import BenchMode

BENCH_HELP = (
    "Measure a workload on this machine until its samples/s are steady, and say how steady.\n\n"
    "Warm-up ends when step times settle (detected, not a fixed count); then blocks of steps are timed "
    "until the 95% confidence interval of the median is within 1% or --duration runs out. Each run "
    "happens in a child process: a crash, out-of-memory or hang is recorded as status "
    "error/oom/timeout with the reason.\n\n"
    "Modes: cached-input (one batch reused: the ceiling without the input pipeline), full (the "
    "workload's own input path), data-only (the input pipeline alone), all (the three, plus the "
    "verdict on which one bounds the workload).\n\n"
    "A command after -- is measured by the throughput lines it prints: tqdm it/s and s/it, the Hugging "
    "Face Trainer's train_samples_per_second, Lightning's bar, Keras ms/step, 'N samples/s', "
    "'N img/s', 'N tokens/s', and a loop's own 'step N … loss X' lines (steps/s from the time between "
    "them). Iterations and steps count samples with --batch-size; any other form is read with "
    "--pattern.\n\n"
    "Examples:\n\n"
    "  perdollar bench mlp\n"
    "  perdollar bench resnet50 --batch-size 32 --mode all --duration 30\n"
    "  perdollar bench my_model.py:workload --find-max-batch\n"
    "  perdollar bench --nproc 2 mlp\n"
    "  perdollar bench --duration 120 -- python train.py --epochs 1\n"
    "  perdollar bench -b 32 -- python loop.py     (its 'step N loss X' lines)\n"
    "  perdollar bench --pattern '([0-9.]+) img/s' -- python train_jax.py\n\n"
    "Exit codes: 0 measured; 1 the workload failed (recorded as oom/error/timeout); 2 bad input."
)

TARGET_HELP = (
    "A built-in workload (mlp, resnet50, vit-b16, bert-base, gpt2…), path/file.py:function, "
    "or after -- any command that prints throughput lines."
)
DURATION_HELP = (
    "Time budget per run in seconds (or 90s, 2m), warm-up included; default 20 s. "
    "A command is stopped after it (default: runs to its end)."
)
PLAN_HELP = (
    "With --nproc: ddp, zero2 or fsdp (PyTorch FSDP sharding), +ac for "
    "activation checkpointing, mbN sequences per process, e.g. fsdp+ac,mb2."
)
TIMEOUT_HELP = (
    "Stop a measurement after this many seconds, loading the workload and --nproc's one-process "
    "baseline run included (default 2×duration+90, about twice that with --nproc); it is recorded "
    "as a timeout."
)


@dataclass(frozen=True, slots=True)
class BenchRun:
    """How a workload's training steps are measured: in which mode, for how long, over what."""

    mode: BenchMode = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        "cached-input", "--mode", "cached-input | full | data-only | all.", short="-m"
    )
    duration: str | None = declared(None, "--duration", DURATION_HELP, short="-d")
    nproc: int = declared(1, "--nproc", "Processes for data-parallel DDP (gloo on CPU, NCCL on GPU).")
    plan: str | None = declared(None, "--plan", PLAN_HELP)
    # Not a fixed set of choices: cuda:N names any of the machine's GPUs.
    device: str = declared("auto", "--device", "auto, cpu, cuda or cuda:N.")
    timeout: float | None = declared(None, "--timeout", TIMEOUT_HELP)
    find_max_batch: bool = declared(
        False, "--find-max-batch", "Bisect the largest batch that fits in memory."
    )
    memory_limit: str | None = declared(
        None, "--memory-limit", "Cap the child's address space, e.g. 8G (CPU runs)."
    )


@dataclass(frozen=True, slots=True)
class CommandReading:
    """How throughput is read from a command's output (``bench -- COMMAND``)."""

    pattern: str | None = declared(
        None,
        "--pattern",
        "Regex for a command's throughput lines, the number in its first group (or one named value)."
        " Default: the formats of tqdm, the Hugging Face Trainer, Lightning, Keras, samples/s, img/s,"
        " tokens/s and 'step N … loss X' lines.",
    )
    unit: str | None = declared(
        None,
        "--unit",
        "What a --pattern's number counts per second: samples (default), tokens, iterations or steps"
        " (these two need --batch-size).",
    )


@dataclass(frozen=True, slots=True)
class LatencyCurve:
    """A serving latency curve instead of a training run."""

    inference: bool = declared(
        False, "--inference", "Measure serving latency vs batch size instead of training."
    )
    max_batch: int | None = declared(None, "--max-batch", "With --inference: largest batch tried.")
    concurrency: str | None = declared(
        None, "--concurrency", "With --inference: concurrency levels, e.g. 1,4,16."
    )
