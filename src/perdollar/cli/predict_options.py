"""The options of ``perdollar predict`` and ``perdollar validate``, declared once here and generated
onto those commands by :func:`perdollar.cli.declared.takes`."""

from __future__ import annotations

from dataclasses import dataclass

from perdollar.question import declared


@dataclass(frozen=True, slots=True)
class PredictionTarget:
    """What ``predict`` predicts on, how its input arrives, and a served model's load."""

    instance: str | None = declared(None, "--instance", "Instance type, e.g. g5.2xlarge.", short="-i")
    nodes: int = declared(1, "--nodes", "Number of instances (data parallel).", minimum=1, short="-n")
    data_bytes_per_sample: float | None = declared(
        None, "--data-bytes-per-sample", "Bytes streamed from object storage per sample."
    )
    input_rate_per_core: float | None = declared(
        None, "--input-rate-per-core", "Data-only samples/s per host core (input-pipeline cap)."
    )
    inference: bool = declared(False, "--inference", "Serve an LLM config: prefill and decode.")
    accelerator: str | None = declared(
        None, "--accelerator", "LLM --inference: accelerator name or alias (or give --instance)."
    )
    gpus: int = declared(
        1, "--gpus", "LLM --inference: GPUs in all (replicas × TP × PP); or give --instance.", minimum=1
    )
    concurrency: int | None = declared(
        None, "--concurrency", "LLM --inference: requests in flight (closed loop): TTFT/TPOT p50, p99."
    )
    rps: float | None = declared(
        None, "--rps", "LLM --inference: requests/s arriving (Poisson): TTFT/TPOT p50, p99."
    )


@dataclass(frozen=True, slots=True)
class ValidationTargets:
    """Which GPUs ``validate`` predicts, and whether the shipped fit is first refitted without them."""

    target_gpus: str | None = declared(None, "--target-gpus", "Comma-separated gpu values to predict.")
    refit: bool = declared(
        True,
        "--refit/--no-refit",
        "Refit without the target GPUs first where the shipped fit saw their rows.",
    )
