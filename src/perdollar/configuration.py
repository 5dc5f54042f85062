"""One grammar for a configuration: how many machines of which type, on which market, where.

The text form is the label every table prints, ``2x g5.12xlarge spot (aws us-east-1)``, and the
parser reads it back together with the shorter forms people type::

    [N x | N× | Nx] [CLOUD:]NAME [spot | on-demand | ondemand | od]
        [(CLOUD [REGION]) | @REGION | in REGION | REGION] [with PLAN]

``NAME`` is kept as written (a SageMaker ``ml.`` name stays one: the catalog resolves it) and
``PLAN`` is one token an LLM plan parser gives meaning to (``fsdp+ac,mb4,ga8``). What is not
written stays ``None`` so that each command applies its own default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from perdollar.errors import PerdollarError

MARKET_WORDS = {
    "spot": "spot", "on-demand": "on-demand", "ondemand": "on-demand", "od": "on-demand",
    "committed-1y": "committed-1y", "committed-3y": "committed-3y",
}  # fmt: skip
ACCEPTED_FORM = (
    "[N x] [CLOUD:]NAME [spot|on-demand|committed-1y|committed-3y] [(CLOUD REGION) | @REGION] [with PLAN]"
)
EXAMPLE = "2x g5.12xlarge spot (aws us-east-1)"

_NAME = r"[A-Za-z][A-Za-z0-9_.+\-]*"
_CLOUD = r"[A-Za-z][A-Za-z0-9\-]*"
_REGION = r"[A-Za-z0-9][A-Za-z0-9\-]*"
_MARKET = r"committed-1y|committed-3y|spot|on-demand|ondemand|od"
# The bare region form (``g5.xlarge spot us-east-1``) must not swallow a keyword or a market.
_BARE_REGION = rf"(?!(?:with|in|{_MARKET})(?:\s|$)){_REGION}"
_GRAMMAR = re.compile(
    rf"""^\s*
    (?:(?P<nodes>\d+)\s*[x×]\s*)?
    (?:(?P<prefix_cloud>{_CLOUD}):)?
    (?P<name>{_NAME})
    (?:\s+(?P<market>{_MARKET}))?
    (?:\s*⚠)?                                   # the tables' data-quality mark
    (?:
        \s*\(\s*(?P<cloud>{_CLOUD})(?:\s+(?P<region>{_REGION}))?\s*\)
      | \s*@\s*(?P<at_region>{_REGION})
      | \s+in\s+(?P<in_region>{_REGION})
      | \s+(?P<bare_region>{_BARE_REGION})
    )?
    (?:\s+with\s+(?P<plan>\S+))?
    \s*$""",
    re.IGNORECASE | re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class Configuration:
    """``nodes`` machines of ``instance_type``; ``None`` where the text left a part out."""

    nodes: int
    instance_type: str
    market: str | None  # spot | on-demand | committed-1y | committed-3y
    cloud: str | None
    region: str | None
    plan: str | None = None  # an LLM training/serving plan, as text

    @property
    def label(self) -> str:
        """``2x g5.12xlarge spot (aws us-east-1)``; parts that are unknown are left out."""
        text = f"{self.nodes}x {self.instance_type}"
        if self.market:
            text += f" {self.market}"
        if self.cloud:
            text += f" ({self.cloud} {self.region})" if self.region else f" ({self.cloud})"
        elif self.region:
            text += f" @{self.region}"
        if self.plan:
            text += f" with {self.plan}"
        return text

    def __str__(self) -> str:
        return self.label


def parse_configuration(text: str) -> Configuration:
    """The :class:`Configuration` a label or a typed shorthand names; a one-line error if none."""
    match = _GRAMMAR.match(text)
    if not match:
        raise PerdollarError(
            f"configuration {_quoted(text)} is not understood",
            f"write it as {ACCEPTED_FORM}, e.g. {EXAMPLE!r}",
        )
    nodes = int(match["nodes"] or 1)
    if nodes < 1:
        raise PerdollarError(f"configuration {_quoted(text)} asks for {nodes} nodes", "give at least 1x")
    prefix_cloud, cloud = _lower(match["prefix_cloud"]), _lower(match["cloud"])
    if prefix_cloud and cloud and prefix_cloud != cloud:
        raise PerdollarError(
            f"configuration {_quoted(text)} names two clouds ({prefix_cloud} and {cloud})", "name one"
        )
    region = match["region"] or match["at_region"] or match["in_region"] or match["bare_region"]
    market = match["market"]
    return Configuration(
        nodes=nodes,
        instance_type=match["name"],
        market=MARKET_WORDS[market.lower()] if market else None,
        cloud=prefix_cloud or cloud,
        region=_lower(region),
        plan=match["plan"],
    )


def _lower(value: str | None) -> str | None:
    return value.lower() if value else None


def _quoted(text: str) -> str:
    """The text as the user wrote it, on one line."""
    return repr(" ".join(text.split()))
