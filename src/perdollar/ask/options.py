"""The options of ``recommend``, ``compare`` and ``sweep`` that are not settings of the question
itself: the target and goal as typed (``1e9``, ``72h``), where to look, how to serve, how a fleet
over a day autoscales.

Declared once here, generated onto each command by the command line (``perdollar.cli.declared``),
and read into a question by :mod:`perdollar.ask.building`, which the Python API shares.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from perdollar.catalog.model import DEFAULT_INSTANCE_START_S
from perdollar.price.fleet import (
    DEFAULT_AVAILABILITY,
    DEFAULT_MIN_REPLICAS,
    DEFAULT_TARGET_UTILISATION,
    MIN_TARGET_UTILISATION,
)
from perdollar.question import Declared, declared, declared_as
from perdollar.vocabulary import BUNDLED_CLOUDS_TEXT, Precision, TrainingObjective


@dataclass(frozen=True, slots=True)
class Target:
    """How much to process and by when, as the user typed it."""

    samples: str | None = declared(None, "--samples", "Target samples to process, e.g. 1e9 or 250M.")
    epochs: float | None = declared(None, "--epochs", "Target epochs (with --dataset-size).", scope="epochs")
    dataset_size: str | None = declared(
        None,
        "--dataset-size",
        "Samples per epoch, e.g. 1.28M (with --epochs); or the data's size in bytes, e.g. 20TB, to"
        " price moving it from --data-region.",
        scope="epochs",
    )
    deadline: str | None = declared(None, "--deadline", "Finish within this time, e.g. 72h or 3d.")
    tokens: str | None = declared(
        None, "--tokens", "Language model: target tokens, e.g. 2e10.", unit="tokens", scope="tokens"
    )


PRECISION_HELP = (
    "fp32, tf32, amp-bf16, amp-fp16, bf16, fp16; language models also fp8 (FP8 linear layers, a scale"
    " per tensor) and fp8-rowwise (torchao's row-wise recipe); served language models also int8, int4"
    " (awq, gptq), q4_k_m, fp4 (nvfp4) and mxfp4. Default: the workload's own."
)

# The options every command that takes them takes alike: declared once here, taken by the question's
# settings below and by the commands' own groups (perdollar.cli.shared_options).
BATCH_SIZE = Declared(
    "--batch-size",
    "Samples per device in a step (serving: per request; a language model served: its static batch)."
    " Default: the workload's own.",
    scope="batch", short="-b", aliases=("--batch",),
)  # fmt: skip
PRECISION = Declared("--precision", PRECISION_HELP, scope="precision", short="-p")
CLOUD = Declared(
    "--cloud",
    f"Cloud (repeatable where a command keeps several): {BUNDLED_CLOUDS_TEXT}, or one a refresh added.",
    scope="cloud",
)
REGION = Declared(
    "--region",
    "Region (repeatable where a command keeps several): us-east-1, us-central1, eastus; where candidates"
    " are ranked, also a pattern such as us-*.",
    scope="region",
)
OBJECTIVE = Declared(
    "--objective",
    "What to rank by: samples-per-dollar, time, cost, weighted (--weights) or carbon (kg CO2e).",
)


@dataclass(frozen=True, slots=True)
class Step:
    """The workload's step as the user fixed it; a command takes the scopes it uses (batch, precision)."""

    batch_size: int | None = declared_as(BATCH_SIZE)
    precision: Precision | None = declared_as(PRECISION)  # noqa: RUF009 (a dataclasses.field)


@dataclass(frozen=True, slots=True)
class Places:
    """The clouds and regions a command keeps to, or names an instance on (scopes cloud, region)."""

    clouds: tuple[str, ...] = declared_as(CLOUD, ())
    regions: tuple[str, ...] = declared_as(REGION, ())


DEFAULT_MAX_NODES = 4
# The GPUs of the largest common GPU host: with a chip cap and no node cap, GPU clusters are tried
# up to the cap's chips on hosts of this size, as a TPU slice is.
GPUS_PER_LARGE_HOST = 8
# Beyond this node count a chip cap alone does not widen the search (each count is planned on every
# instance type); --max-nodes reaches further.
DERIVED_NODE_CAP = 32


def node_cap(max_nodes: int | None, max_accelerators: int | None) -> int:
    """The node count tried up to: the one given, else enough large GPU hosts for the chip cap."""
    if max_nodes is not None:
        return max_nodes
    if max_accelerators is None or max_accelerators < GPUS_PER_LARGE_HOST * DEFAULT_MAX_NODES:
        return DEFAULT_MAX_NODES
    return min(int(max_accelerators) // GPUS_PER_LARGE_HOST, DERIVED_NODE_CAP)


@dataclass(frozen=True, slots=True)
class Shape:
    """The candidates' node counts and the workload's step: the rest of a training question's shape."""

    max_nodes: int | None = declared(
        None,
        "--max-nodes",
        f"Largest node count tried (1, 2, 4, … up to it). Default {DEFAULT_MAX_NODES}, or with"
        " --max-accelerators as many 8-GPU hosts as it allows.",
    )
    max_accelerators: int | None = declared(
        None,
        "--max-accelerators",
        "Most accelerator chips a candidate may use: GPUs per node × nodes, or a TPU slice's chips ×"
        " slices, counted alike (default: no cap beyond --max-nodes).",
        unit="chips",
        minimum=1,
    )
    stacks: tuple[str, ...] = declared(
        (),
        "--stack",
        "Keep to chips of this software stack (repeatable, or commas): cuda, rocm, neuron (Trainium),"
        " xla (TPU; also 'tpu'), habana (Gaudi). A TPU or Trainium row means moving the job to its"
        " stack (MaxText on JAX, NxD Training); --stack cuda keeps to NVIDIA GPUs.",
    )
    batch_size: int | None = declared_as(BATCH_SIZE)
    precision: Precision | None = declared_as(PRECISION)  # noqa: RUF009 (a dataclasses.field)


@dataclass(frozen=True, slots=True)
class Goal:
    """What to optimise and within which limits."""

    budget: float | None = declared(None, "--budget", "Expected cost cap.", unit="USD")
    objective: TrainingObjective = declared_as(OBJECTIVE, "samples-per-dollar")  # noqa: RUF009 (a dataclasses.field)
    weights: str | None = declared(None, "--weights", "For --objective weighted: time=1,cost=2.")
    confidence: float = declared(0.9, "--confidence", "Required P(finish by --deadline).")


@dataclass(frozen=True, slots=True)
class Where:
    """Which offers may be candidates."""

    market: str = declared(
        "any",
        "--market",
        "on-demand | spot | committed-1y | committed-3y | committed (both terms) | any (committed terms"
        " too with --horizon); several with commas: on-demand,committed.",
        parse="markets",
    )
    clouds: tuple[str, ...] = declared_as(CLOUD, ())
    regions: tuple[str, ...] = declared_as(REGION, ())


@dataclass(frozen=True, slots=True)
class Serving:
    """A serving question: the rate to serve and the latency to keep."""

    inference: bool = declared(
        False,
        "--inference",
        "Serving: rank deployments by cost per million requests (tokens for a language model).",
    )
    qps: float | None = declared(
        None,
        "--qps",
        "--inference: requests per second (the same rate as --rps).",
        unit="requests/s",
        scope="network",
    )
    p99_ms: float | None = declared(
        None, "--p99-ms", "--inference: p99 latency SLO.", unit="ms", scope="network"
    )
    p95_ms: float | None = declared(
        None, "--p95-ms", "--inference: p95 latency SLO.", unit="ms", scope="network"
    )
    max_wait_ms: float | None = declared(
        None, "--max-wait-ms", "--inference: batching wait cap.", unit="ms", scope="network"
    )
    rps: float | None = declared(
        None,
        "--rps",
        "--inference: requests per second, for a network or a language model (--qps is the same rate).",
        unit="requests/s",
    )
    tokens_per_day: str | None = declared(
        None,
        "--tokens-per-day",
        "Language model --inference: output tokens a day (instead of --rps).",
        unit="tokens/day",
    )
    lengths_file: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None,
        "--lengths-file",
        "Language model --inference: real requests' token lengths (CSV or JSON Lines) instead of "
        "--input-tokens/--output-tokens.",
        scope="language-model-traffic",
    )
    load_curve: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None,
        "--load-curve",
        "Language model --inference: a day of traffic, CSV with hour (0-23 or ISO timestamp) and "
        "requests_per_second; sizes a fleet per hour instead of one --rps.",
        scope="language-model-traffic",
    )
    trace: Path | None = declared(  # noqa: RUF009 (declared() returns a dataclasses.field)
        None,
        "--trace",
        "Language model --inference: requests as they came, CSV or JSON Lines with arrival_s, "
        "input_tokens and output_tokens; sizes a fleet per hour of it.",
        scope="language-model-traffic",
    )
    # A language model's latency objectives (p99, milliseconds): kept in the question's serving goal.
    ttft_p99_ms: float | None = declared(
        None,
        "--ttft-p99-ms",
        "Language model serving: time-to-first-token SLO (p99).",
        unit="ms",
        scope="serving-slo",
    )
    tpot_p99_ms: float | None = declared(
        None,
        "--tpot-p99-ms",
        "Language model serving: time-per-output-token SLO (p99).",
        unit="ms",
        scope="serving-slo",
    )


@dataclass(frozen=True, slots=True)
class FleetFlags:
    target_utilisation: float = declared(
        DEFAULT_TARGET_UTILISATION, "--target-utilisation",
        "--load-curve/--trace: share of a replica's SLO capacity the autoscaler fills.",
        minimum=MIN_TARGET_UTILISATION,
    )  # fmt: skip
    min_replicas: int = declared(
        DEFAULT_MIN_REPLICAS, "--min-replicas", "--load-curve/--trace: replicas kept at the quietest hour.",
        minimum=0,
    )  # fmt: skip
    instance_start_s: float = declared(
        DEFAULT_INSTANCE_START_S, "--instance-start-s",
        "--load-curve/--trace: seconds from asking for an instance to its server loading weights.",
        unit="s", minimum=0,
    )  # fmt: skip
    availability: float = declared(
        DEFAULT_AVAILABILITY, "--availability",
        "--load-curve/--trace: share of intervals that must keep their capacity through spot reclaims.",
        minimum=0,
    )  # fmt: skip
