"""Restricting a sweep to the configurations a user named (``perdollar sweep --only LABEL``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from perdollar.catalog.names import ec2_name_for_sagemaker
from perdollar.configuration import Configuration
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.price.model import Estimate

if TYPE_CHECKING:  # the select stage pulls in pandas; restricting a sweep never needs it
    from perdollar.select.model import Recommendation


def _machine(configuration: Configuration) -> str:
    """The catalog's name, in lower case: a SageMaker ``ml.`` name is its EC2 shape."""
    name = configuration.instance_type
    return (ec2_name_for_sagemaker(name) or name).lower()


def matches(estimate: Estimate, configuration: Configuration) -> bool:
    """Whether ``estimate`` is what ``configuration`` names, on the parts the text gave (the
    node count always: ``g5.xlarge`` is one of them)."""
    wanted, has = configuration, estimate.configuration
    sagemaker = ec2_name_for_sagemaker(wanted.instance_type) is not None
    return (
        has.nodes == wanted.nodes
        and has.instance_type.lower() == _machine(wanted)
        and (not sagemaker or has.cloud == "aws")
        and wanted.market in (None, has.market)
        and wanted.cloud in (None, has.cloud)
        and wanted.region in (None, has.region)
        and wanted.plan in (None, has.plan)
    )


def select_only(
    estimates: Sequence[Estimate], configurations: Sequence[Configuration]
) -> tuple[Estimate, ...]:
    """The estimates (in their ranked order) that one of ``configurations`` names.

    Every configuration must name at least one feasible estimate: one that names none of the
    ranked candidates is a mistake in the input, one that names only excluded ones cannot run.
    """
    for configuration in configurations:
        named = [e for e in estimates if matches(e, configuration)]
        if not named:
            nearby = sorted(
                {e.label for e in estimates if e.instance_type.lower() == _machine(configuration)}
            )
            fix = (
                f"name one the ranking has: {', '.join(nearby[:4])}"
                if nearby
                else "name a configuration `perdollar recommend` lists for the same question, or widen "
                "the question (--max-nodes, --market, --cloud, --region)"
            )
            raise PerdollarError(f"--only {configuration.label!r} names none of the ranked candidates", fix)
        if not any(e.feasible for e in named):
            raise NothingFeasibleError(
                f"--only {configuration.label!r} cannot run: {named[0].excluded_reason}",
                "name a configuration `perdollar recommend` lists as feasible",
            )
    return tuple(e for e in estimates if any(matches(e, c) for c in configurations))


def restrict_recommendation(
    recommendation: Recommendation, configurations: Sequence[Configuration], *, checked: bool = True
) -> Recommendation:
    """The recommendation with only the estimates ``configurations`` name; its Pareto and tie
    indices pointed into the full list, so they are dropped. ``checked``: refuse a configuration
    that names no feasible estimate (the user's input); a re-ranked answer is restricted as it is."""
    if checked:
        kept = select_only(recommendation.estimates, configurations)
    else:
        kept = tuple(e for e in recommendation.estimates if any(matches(e, c) for c in configurations))
    return dataclasses.replace(recommendation, estimates=kept, pareto=(), ties=())
