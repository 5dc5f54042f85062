"""What a question asks for, one typed goal per kind: a training run's target and limits, a
deployment's rate within its latency objectives, a fleet's day of traffic.

A :class:`perdollar.question.Question` holds exactly one of them; the type of its goal says what
kind of question it is, and :func:`perdollar.ask.answer` routes it by that type.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, TypeAlias

from perdollar.vocabulary import (
    SERVING_OBJECTIVE,
    Kind,
    LatencyMetric,
    ServingObjective,
    TrafficKind,
    TrainingObjective,
)

DEFAULT_CONFIDENCE = 0.9
DEFAULT_SERVING_HEADROOM = 1.25
# The quantile a language model's latency objectives are given at (--ttft-p99-ms, --tpot-p99-ms).
TOKEN_LATENCY_QUANTILE = 0.99


@dataclass(frozen=True, slots=True)
class TrainingGoal:
    """What a training run must process, by when and within which budget, and what ranks it."""

    kind: ClassVar[Kind] = "train"

    objective: TrainingObjective = "samples-per-dollar"
    target_samples: float | None = None
    deadline_hours: float | None = None
    budget_usd: float | None = None
    weights: str | None = None  # --objective weighted: "time=1,cost=2"
    confidence: float = DEFAULT_CONFIDENCE  # required P(finish by the deadline)

    @property
    def has_target(self) -> bool:
        return bool(self.target_samples)


@dataclass(frozen=True, slots=True)
class LatencyObjective:
    """One latency a deployment must keep: ``metric`` at ``quantile`` within ``ms`` milliseconds."""

    metric: LatencyMetric
    quantile: float
    ms: float


@dataclass(frozen=True, slots=True)
class ServingGoal:
    """What a deployment must serve: a request rate within its latency objectives, and what ranks it."""

    kind: ClassVar[Kind] = "inference"

    qps: float
    objectives: tuple[LatencyObjective, ...] = ()
    objective: ServingObjective = SERVING_OBJECTIVE
    max_wait_ms: float | None = None
    headroom: float = DEFAULT_SERVING_HEADROOM
    spot_overprovision: float | None = None
    max_batch: int | None = None

    @property
    def slo(self) -> dict[float, float]:
        """A network's request-latency objectives, quantile → milliseconds."""
        return {o.quantile: o.ms for o in self.objectives if o.metric == "latency"}

    def limit_ms(self, metric: LatencyMetric, quantile: float = TOKEN_LATENCY_QUANTILE) -> float | None:
        """The milliseconds ``metric`` must keep at ``quantile``; None when nothing bounds it."""
        return next((o.ms for o in self.objectives if (o.metric, o.quantile) == (metric, quantile)), None)


@dataclass(frozen=True, slots=True)
class FleetTraffic:
    """The traffic a fleet over a day is sized for, kept whole so that the question can be asked
    again after its file is gone, and how the fleet autoscales."""

    kind: TrafficKind  # how ``text`` is read
    source: str  # the file's name, as the answer names the traffic
    text: str
    target_utilisation: float
    min_replicas: int
    instance_start_s: float
    availability: float


@dataclass(frozen=True, slots=True)
class FleetGoal:
    """A fleet over a day: every interval of ``traffic`` served within ``serving``'s objectives
    (whose rate is the day's mean)."""

    kind: ClassVar[Kind] = "inference"

    serving: ServingGoal
    traffic: FleetTraffic

    @property
    def objective(self) -> ServingObjective:
        return self.serving.objective


Goal: TypeAlias = TrainingGoal | ServingGoal | FleetGoal


def served(goal: Goal) -> ServingGoal | None:
    """The serving goal of a deployment or of a fleet over a day; None for a training run."""
    if isinstance(goal, FleetGoal):
        return goal.serving
    return goal if isinstance(goal, ServingGoal) else None


def trained(goal: Goal) -> TrainingGoal | None:
    """The goal of a training run; None for a deployment or a fleet."""
    return goal if isinstance(goal, TrainingGoal) else None


def training_goal(goal: Goal) -> TrainingGoal:
    """The goal of a question routed as a training run (perdollar.ask.answer routes by the goal's type)."""
    if not isinstance(goal, TrainingGoal):
        raise TypeError(f"a training answer was asked of a {type(goal).__name__}")
    return goal


def request_slo(p99_ms: float | None, p95_ms: float | None) -> tuple[LatencyObjective, ...]:
    """A network's request-latency objectives from ``--p99-ms`` and ``--p95-ms``, those given."""
    given = ((0.99, p99_ms), (0.95, p95_ms))
    return tuple(LatencyObjective("latency", quantile, ms) for quantile, ms in given if ms is not None)


def token_slo(ttft_p99_ms: float | None, tpot_p99_ms: float | None) -> tuple[LatencyObjective, ...]:
    """A language model's latency objectives from ``--ttft-p99-ms`` and ``--tpot-p99-ms``, those given."""
    given: tuple[tuple[LatencyMetric, float | None], ...] = (("ttft", ttft_p99_ms), ("tpot", tpot_p99_ms))
    return tuple(
        LatencyObjective(metric, TOKEN_LATENCY_QUANTILE, ms) for metric, ms in given if ms is not None
    )
