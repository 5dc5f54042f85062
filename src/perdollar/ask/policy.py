"""A question's settings checked once, whether they were typed or read back from the store.

The command line refuses an objective or a market it does not know before any work; a question
read back from the store must pass the very same checks, or ``history reevaluate`` would answer a
question nobody could have asked (a stored objective ``carbn`` ranked silently by cost, a target
utilisation of 0 dividing by zero). Every check here says what is wrong in the words of the flag
that sets it.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import replace
from typing import TypeGuard, get_args

from perdollar.ask.offers import check_market
from perdollar.ask.questions import decided
from perdollar.catalog.model import SoftwareStack
from perdollar.errors import PerdollarError
from perdollar.goals import FleetGoal, FleetTraffic, ServingGoal, TrainingGoal
from perdollar.predict.limits import CandidateLimits
from perdollar.price.fleet import MIN_TARGET_UTILISATION, FleetPolicy
from perdollar.question import Question
from perdollar.vocabulary import (
    SERVING_OBJECTIVE,
    TOKEN_SERVING_OBJECTIVE,
    TRAINING_OBJECTIVES,
    ServingObjective,
)

CARBON: ServingObjective = "carbon"
# A deployment is ranked by its cost per request or token, or (a language model's) by its carbon.
LANGUAGE_MODEL_SERVING_OBJECTIVES = (TOKEN_SERVING_OBJECTIVE, CARBON)
TRAFFIC_KINDS = ("load-curve", "trace")
# The catalog's software stacks (each accelerator record's ``software_stack``), and the names people
# give them by their chips.
STACKS: tuple[str, ...] = get_args(SoftwareStack)
STACK_ALIASES = {
    "tpu": "xla", "jax": "xla", "maxtext": "xla", "trainium": "neuron", "inferentia": "neuron",
    "gaudi": "habana", "nvidia": "cuda", "amd": "rocm",
}  # fmt: skip


def canonical_stack(name: str) -> str:
    """A ``--stack`` name in the catalog's words, or a one-line refusal naming the near ones."""
    typed = name.strip().lower()
    if typed in STACKS:
        return typed
    if typed in STACK_ALIASES:
        return STACK_ALIASES[typed]
    known = [*STACKS, *STACK_ALIASES]
    near = difflib.get_close_matches(typed, known, n=1, cutoff=0.6)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise PerdollarError(
        f"unknown software stack {name!r} for --stack",
        f"{hint}choose from {', '.join(STACKS)} (tpu, trainium and gaudi name theirs)",
    )


def objectives_for(question: Question) -> tuple[str, ...]:
    """The objectives a question of this kind can be ranked by."""
    if question.goal.kind == "train":
        return TRAINING_OBJECTIVES
    if question.family == "language-model":
        return LANGUAGE_MODEL_SERVING_OBJECTIVES
    return (SERVING_OBJECTIVE,)


def serving_objective(typed: str, default: ServingObjective) -> ServingObjective:
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


def check_objective(question: Question) -> None:
    """A one-line error for an objective questions of this kind cannot be ranked by."""
    question = decided(question)
    allowed = objectives_for(question)
    if question.goal.objective not in allowed:
        raise PerdollarError(
            f"unknown objective {question.goal.objective!r}", f"choose one of {', '.join(allowed)}"
        )


def check_policy(question: Question) -> None:
    """One-line errors for settings no answer can honour: the objective, the market, the node
    count, the confidence and, for a fleet over a day, how it autoscales."""
    check_objective(question)
    if not isinstance(question.market, str):
        raise PerdollarError(f"--market {question.market!r} is not a market", "give e.g. --market on-demand")
    check_market(question.market)
    if not _whole(question.max_nodes) or question.max_nodes < 1:
        raise PerdollarError(f"--max-nodes must be at least 1, got {question.max_nodes}", "give 1, 2, 4, 8 …")
    chips = question.max_accelerators
    if chips is not None and (not _whole(chips) or chips < 1):
        raise PerdollarError(
            f"--max-accelerators must be a whole number of chips, at least 1, got {chips!r}",
            "give e.g. --max-accelerators 64",
        )
    for stack in question.stacks:
        canonical_stack(str(stack))
    goal = question.goal
    if isinstance(goal, TrainingGoal) and (not _number(goal.confidence) or not 0.0 < goal.confidence < 1.0):
        raise PerdollarError(f"--confidence {goal.confidence} is not a probability", "give a value like 0.9")
    if isinstance(goal, FleetGoal):
        fleet_policy(goal.traffic)


def candidate_limits(question: Question) -> CandidateLimits:
    """The clusters a training question admits: its chip cap and its stacks, in the catalog's words."""
    return CandidateLimits(
        max_accelerators=None if question.max_accelerators is None else int(question.max_accelerators),
        stacks=frozenset(canonical_stack(str(stack)) for stack in question.stacks),
    )


def no_candidate_within_limits(question: Question) -> PerdollarError:
    """The refusal when the chip cap or the stacks leave no cluster to rank."""
    given = [f"--max-accelerators {question.max_accelerators}"] if question.max_accelerators else []
    given += [f"--stack {','.join(question.stacks)}"] if question.stacks else []
    return PerdollarError(
        f"no instance or cluster within {' and '.join(given)}",
        "raise --max-accelerators or add stacks to --stack (cuda, rocm, xla, neuron, habana)",
        exit_code=3,
    )


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
    goal = question.goal
    if isinstance(goal, FleetGoal):
        serving = replace(goal.serving, objective=serving_objective(typed, goal.serving.objective))
        return replace(question, goal=replace(goal, serving=serving))
    assert isinstance(goal, ServingGoal)  # a training question is ranked by its own objectives
    return replace(question, goal=replace(goal, objective=serving_objective(typed, goal.objective)))


def _number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> bool:
    return _number(value) and float(value) == int(value)
