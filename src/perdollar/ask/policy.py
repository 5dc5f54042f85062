"""A question's settings checked once, whether they were typed or read back from the store.

The command line refuses an objective or a market it does not know before any work; a question
read back from the store must pass the very same checks, or ``history reevaluate`` would answer a
question nobody could have asked (a stored objective ``carbn`` ranked silently by cost, a target
utilisation of 0 dividing by zero). Every check here says what is wrong in the words of the flag
that sets it.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TypeGuard

from perdollar.ask.offers import check_market
from perdollar.ask.questions import decided
from perdollar.errors import PerdollarError
from perdollar.price.fleet import MIN_TARGET_UTILISATION, FleetPolicy
from perdollar.question import FleetTraffic, Question
from perdollar.vocabulary import SERVING_OBJECTIVE, TOKEN_SERVING_OBJECTIVE, TRAINING_OBJECTIVES

CARBON = "carbon"
# A deployment is ranked by its cost per request or token, or (a language model's) by its carbon.
LANGUAGE_MODEL_SERVING_OBJECTIVES = (TOKEN_SERVING_OBJECTIVE, CARBON)
TRAFFIC_KINDS = ("load-curve", "trace")


def objectives_for(question: Question) -> tuple[str, ...]:
    """The objectives a question of this kind can be ranked by."""
    if question.kind == "train":
        return TRAINING_OBJECTIVES
    if question.family == "language-model":
        return LANGUAGE_MODEL_SERVING_OBJECTIVES
    return (SERVING_OBJECTIVE,)


def serving_objective(typed: str, default: str) -> str:
    """The objective a language model's deployment is ranked by, from ``--objective`` as typed
    (whose default names the training objective): carbon, or the cost per token."""
    if typed == CARBON:
        return CARBON
    if typed in ("samples-per-dollar", "cost"):
        return default
    if typed in TRAINING_OBJECTIVES:
        raise PerdollarError(
            f"--objective {typed} ranks training runs; a deployment is ranked by its cost per token or "
            "by its carbon",
            "give --objective carbon, or leave --objective out",
        )
    raise PerdollarError(f"unknown objective {typed!r}", f"choose one of {', '.join(TRAINING_OBJECTIVES)}")


def check_policy(question: Question) -> None:
    """One-line errors for settings no answer can honour: the objective, the market, the node
    count, the confidence and, for a fleet over a day, how it autoscales."""
    question = decided(question)
    allowed = objectives_for(question)
    if question.objective not in allowed:
        raise PerdollarError(
            f"unknown objective {question.objective!r}", f"choose one of {', '.join(allowed)}"
        )
    if not isinstance(question.market, str):
        raise PerdollarError(f"--market {question.market!r} is not a market", "give e.g. --market on-demand")
    check_market(question.market)
    if not _whole(question.max_nodes) or question.max_nodes < 1:
        raise PerdollarError(f"--max-nodes must be at least 1, got {question.max_nodes}", "give 1, 2, 4, 8 …")
    if not _number(question.confidence) or not 0.0 < question.confidence < 1.0:
        raise PerdollarError(
            f"--confidence {question.confidence} is not a probability", "give a value like 0.9"
        )
    if question.traffic is not None:
        fleet_policy(question.traffic)


def fleet_policy(traffic: FleetTraffic) -> FleetPolicy:
    """How a fleet over a day autoscales, each setting checked as the command line checks it."""
    if traffic.kind not in TRAFFIC_KINDS:
        raise PerdollarError(
            f"the traffic is a {traffic.kind!r}, neither a load curve nor a trace",
            "give --load-curve FILE or --trace FILE",
        )
    utilisation = traffic.target_utilisation
    if not _number(utilisation) or not MIN_TARGET_UTILISATION <= utilisation <= 1:
        raise PerdollarError(
            f"--target-utilisation must be in [{MIN_TARGET_UTILISATION:g}, 1], got {utilisation!r}",
            "give e.g. --target-utilisation 0.8",
        )
    if not _whole(traffic.min_replicas) or traffic.min_replicas < 0:
        raise PerdollarError(
            f"--min-replicas must be a whole number, 0 or more, got {traffic.min_replicas!r}",
            "give e.g. --min-replicas 1",
        )
    start = traffic.instance_start_s
    if not _number(start) or start < 0:
        raise PerdollarError(
            f"--instance-start-s must be seconds, 0 or more, got {start!r}",
            "give e.g. --instance-start-s 120",
        )
    availability = traffic.availability
    if not _number(availability) or not 0 < availability < 1:
        raise PerdollarError(
            f"--availability must be between 0 and 1, got {availability!r}", "give e.g. --availability 0.999"
        )
    return FleetPolicy(float(utilisation), int(traffic.min_replicas), float(availability))


def with_serving_objective(question: Question, typed: str) -> Question:
    """``question`` ranked by ``--objective`` as typed (see :func:`serving_objective`)."""
    return replace(question, objective=serving_objective(typed, question.objective))


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return _number(value) and float(value) == int(value)
