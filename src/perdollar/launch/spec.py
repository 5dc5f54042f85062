"""A benchmark job: what to run on one candidate, where, and within which caps.

One frozen description per candidate, shared by every executor: SkyPilot turns it into a
``sky.Task``, the local executor runs its setup and run scripts as a subprocess, ``--dry-run``
writes it as a SkyPilot task YAML. Caps are part of the job, not of the executor, so a job can
never cost more than it says, whichever engine runs it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from perdollar.errors import PerdollarError
from perdollar.measure.result import Mode
from perdollar.price.fixed_costs import PROVISIONING_SECONDS, STARTUP_SECONDS

# Billed time before the benchmark starts: provisioning, image pull, `pip install`. Generous on
# purpose: the cap is an upper bound on spend, so underestimating it would break the promise. The
# training answers bill the same provisioning time, so both read it from one place.
DEFAULT_OVERHEAD_SECONDS = PROVISIONING_SECONDS
# Time the benchmark command gets beyond its measuring window: interpreter and CUDA start-up,
# model build, warm-up until step times settle (the start-up a training answer bills per node).
STARTUP_ALLOWANCE_SECONDS = STARTUP_SECONDS
DEFAULT_BENCH_DURATION_S = 60.0
MIN_BENCH_DURATION_S = 5.0
# The environment variable through which a job gets the shared store's URL (a secret: it may
# hold a password); `perdollar bench` stores its result there when it is set.
STORE_SECRET = "PERDOLLAR_STORE"
RESULT_BEGIN = "::perdollar-result-begin::"
RESULT_END = "::perdollar-result-end::"


@dataclass(frozen=True, slots=True)
class JobResources:
    """The machine a job asks for, in SkyPilot's terms."""

    cloud: str
    region: str
    instance_type: str
    accelerator: str | None  # the cloud catalog's accelerator name, e.g. "A10G", "tpu-v5litepod-8"
    accelerator_count: float
    use_spot: bool
    num_nodes: int = 1
    zone: str | None = None  # pinned when known; multi-node clusters always share one zone

    @property
    def accelerators_per_node(self) -> int:
        return max(1, math.floor(self.accelerator_count)) if self.accelerator else 0


@dataclass(frozen=True, slots=True)
class JobCaps:
    """Hard limits of one benchmark job, all derived from the price."""

    price_per_hour: float  # USD/h for all nodes
    max_seconds: float  # wall time of the benchmark command before it is killed
    max_dollars: float  # provisioning + setup + benchmark, all nodes
    overhead_seconds: float = DEFAULT_OVERHEAD_SECONDS
    max_steps: int | None = None

    @property
    def billed_hours(self) -> float:
        return (self.overhead_seconds + self.max_seconds) / 3600

    @property
    def autostop_minutes(self) -> int:
        """Idle minutes after which the cluster tears itself down even if perdollar is gone."""
        return 1


@dataclass(frozen=True, slots=True)
class BenchmarkJob:
    """A benchmark of one workload on one candidate configuration."""

    name: str  # DNS-safe; cluster / managed-job name
    candidate: str  # the candidate's label, e.g. "1x g5.xlarge spot (aws us-east-1)"
    workload: str  # the spec `perdollar bench` takes: built-in name or file.py:function
    resources: JobResources
    caps: JobCaps
    setup: str
    run: str
    duration_s: float
    batch_size: int | None = None
    precision: str | None = None
    mode: Mode = "cached-input"
    envs: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None  # synced to the node (user workload files, requirements)
    store_url: str | None = None  # where the remote writes its result too (a shared store)
    file_mounts: Mapping[str, str] = field(default_factory=dict)  # node path -> local path

    @property
    def cost_cap_usd(self) -> float:
        return self.caps.max_dollars


def job_name(candidate: str, index: int) -> str:
    """A cluster name SkyPilot and every cloud accept: lower case, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", candidate.lower()).strip("-")
    return f"perdollar-{index:02d}-{slug}"[:60].rstrip("-")


def derive_caps(
    price_per_hour: float,
    *,
    duration_s: float,
    max_dollars: float | None = None,
    overhead_seconds: float = DEFAULT_OVERHEAD_SECONDS,
    max_steps: int | None = None,
) -> JobCaps:
    """Caps for one job: the time the benchmark may run, and what that costs at most.

    With ``max_dollars`` the wall time is what the money buys after the overhead; without it,
    the money is what the requested duration (plus start-up and overhead) costs.
    """
    if price_per_hour <= 0 or not math.isfinite(price_per_hour):
        raise PerdollarError(
            f"price {price_per_hour!r} USD/h is not a usable price",
            "refresh the catalog (`perdollar catalog refresh`) or pick another candidate",
        )
    wanted_seconds = duration_s + STARTUP_ALLOWANCE_SECONDS
    if max_dollars is None:
        seconds = wanted_seconds
    else:
        affordable = max_dollars * 3600 / price_per_hour - overhead_seconds
        seconds = min(wanted_seconds, affordable)
    dollars = price_per_hour * (overhead_seconds + max(seconds, 0.0)) / 3600
    return JobCaps(
        price_per_hour=price_per_hour,
        max_seconds=math.floor(seconds),
        max_dollars=dollars if max_dollars is None else min(dollars, max_dollars),
        overhead_seconds=overhead_seconds,
        max_steps=max_steps,
    )


def bench_duration(caps: JobCaps, requested_s: float) -> float:
    """The measuring window that fits inside the cap, or an error when none does."""
    window = min(requested_s, caps.max_seconds - STARTUP_ALLOWANCE_SECONDS)
    if window < min(MIN_BENCH_DURATION_S, requested_s):
        raise PerdollarError(
            f"a ${caps.max_dollars:.2f} cap at ${caps.price_per_hour:.2f}/h leaves no time to measure "
            f"after {caps.overhead_seconds:.0f} s of provisioning",
            "raise --max-dollars-per-run or lower --overhead-seconds",
        )
    return float(math.floor(window))
