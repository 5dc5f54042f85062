"""80% bands from held-out errors: groups of checked predictions and the band each sets.

Each checked prediction is a row: what it is (figure, dense or mixture-of-experts, software stack,
engine or framework, chip architecture), the source it was checked on, and log(predicted /
published) with that source held out of whatever fit predicts it. Rows are grouped from the most
specific (stack, engine, architecture) to the stack alone, and a group's band comes from its rows
each set against the group's other sources: a row's residual is its error less the median error
of the group's rows from other sources and, above the most specific level, from the group's other
members one level down (another architecture within an engine, another engine within a stack), as
a user's setup is a source, and often an engine or chip, that the rows did not come from. The
band is the group's median error plus the 5th to 95th percentile of those residuals, never
narrower than the 5th to 95th percentile of the rows' own errors. So a group whose sources
disagree gets the wide band its next source needs, where the rows' own spread was narrow when one
source held most of them. Why the 5th to 95th and not the 10th to 90th: a source's rows err
together (one build, one harness), so the band of a new setup must be wider than the rows' own
80% spread. A prediction takes the band of the most specific group with at least ``MIN_ROWS``
rows from ``MIN_SOURCES`` sources; a prediction that no group of its figure, kind and stack
covers was never checked: it is ``unvalidated`` and takes the widest checked band of its figure
with the log widths doubled, at least a factor of two either way.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

LEVEL = 0.8
# Fewer rows than this put a 5th percentile on one or two rows: the parent group speaks instead.
MIN_ROWS = 8
# A source's rows share its setup (engine build, driver, harness): their errors move together, so
# a group of one or two sources says little about the next one, and its parent speaks instead.
MIN_SOURCES = 3
# An unchecked prediction's band: the widest checked one with its log widths doubled, and never
# narrower than half to twice the prediction.
UNVALIDATED_WIDENING = 2.0
UNVALIDATED_FLOOR = 2.0
UNVALIDATED = "unvalidated"


@dataclass(frozen=True, slots=True)
class FigureRow:
    """What a band is looked up by: the figure, and what kind of prediction it is."""

    figure: str  # serving: throughput | ttft | tpot; training: training (its tokens per second)
    moe: bool
    stack: str  # the chip's software stack: cuda, rocm, xla, neuron …
    engine: str  # the serving engine, or the training framework
    family: str  # the chip's architecture: Hopper, Ampere, CDNA 3 …


@dataclass(frozen=True, slots=True)
class Band:
    """The published figure lies in [prediction × low, prediction × high] for 80% of rows like it."""

    figure: str
    low: float
    high: float
    group: str  # the group whose rows set it, or "unvalidated"
    rows: int  # held-out rows behind it (0 when unvalidated)

    @property
    def validated(self) -> bool:
        return self.group != UNVALIDATED

    def around(self, value: float) -> tuple[float, float]:
        return value * self.low, value * self.high

    def document(self, value: float) -> dict[str, Any]:
        """The band of ``value`` for a JSON answer."""
        low, high = self.around(value)
        return {"low": low, "high": high, "level": LEVEL, "group": self.group, "rows": self.rows,
                "validated": self.validated}  # fmt: skip


def group_keys(row: FigureRow) -> tuple[str, ...]:
    """The groups a row belongs to, the most specific first."""
    base = f"{row.figure} · {'MoE' if row.moe else 'dense'} · {row.stack}"
    return (f"{base} · {row.engine} · {row.family}", f"{base} · {row.engine}", base)


def _quantiles(values: list[float]) -> tuple[float, float]:
    """The 5th and 95th percentiles (exclusive: a few rows give the wider, honest ends)."""
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=20, method="exclusive")
    return cuts[0], cuts[-1]


def _held_out_residuals(members: list[tuple[str, str, float]]) -> list[float]:
    """Each member's (source, subgroup, error) residual from the median of the members of other
    sources and other subgroups (other sources alone where every member shares one subgroup)."""
    subgroups = {subgroup for _, subgroup, _ in members}
    medians: dict[tuple[str, str], float] = {}
    residuals = []
    for source, subgroup, error in members:
        unit = (source, subgroup)
        if unit not in medians:
            others = [e for s, g, e in members if s != source and (len(subgroups) < 2 or g != subgroup)]
            medians[unit] = statistics.median(others or [e for s, _, e in members if s != source])
        residuals.append(error - medians[unit])
    return residuals


def band_table(
    rows: Iterable[tuple[FigureRow, str, float]], figures: Sequence[str], *, unvalidated_by_kind: bool = False
) -> dict[str, Any]:
    """The stored table from held-out rows (what a row is, its source, log(predicted / published)),
    with the unvalidated band of each of ``figures`` (and of each kind of it, dense or MoE, that
    has a checked group, with ``unvalidated_by_kind``)."""
    members: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for row, source, log_error in rows:
        keys = group_keys(row)
        for level, key in enumerate(keys):
            # The member one level down that a row belongs to ('' at the most specific level).
            members[key].append((source, keys[level - 1] if level else "", log_error))
    groups = {}
    for key in sorted(members):
        mine = members[key]
        sources = {source for source, _, _ in mine}
        if len(mine) < MIN_ROWS or len(sources) < MIN_SOURCES:
            continue
        errors = [error for _, _, error in mine]
        centre = statistics.median(errors)
        spread_low, spread_high = _quantiles(_held_out_residuals(mine))
        own_low, own_high = _quantiles(errors)
        q_low, q_high = min(centre + spread_low, own_low), max(centre + spread_high, own_high)
        # published / predicted = exp(-log error): the low end from the most optimistic rows.
        groups[key] = {"rows": len(mine), "sources": len(sources), "low": math.exp(-q_high),
                       "high": math.exp(-q_low)}  # fmt: skip
    return {"level": LEVEL, "min_rows": MIN_ROWS, "min_sources": MIN_SOURCES, "groups": groups,
            "unvalidated": _unvalidated(groups, figures, unvalidated_by_kind)}  # fmt: skip


def _unvalidated(
    groups: dict[str, dict[str, Any]], figures: Sequence[str], by_kind: bool
) -> dict[str, dict[str, float]]:
    """The widest stack-level band of each figure (and kind) with its log widths doubled."""
    out = {}
    kinds = ("dense", "MoE") if by_kind else ()
    for name in [*figures, *(f"{figure} · {kind}" for figure in figures for kind in kinds)]:
        stack_level = [g for key, g in groups.items() if key.startswith(f"{name} ·") and key.count("·") == 2]
        if not stack_level and name not in figures:
            continue  # a kind nothing checked takes its figure's
        below = max((-math.log(g["low"]) for g in stack_level), default=0.0)
        above = max((math.log(g["high"]) for g in stack_level), default=0.0)
        floor = math.log(UNVALIDATED_FLOOR)
        out[name] = {"low": math.exp(-max(UNVALIDATED_WIDENING * below, floor)),
                     "high": math.exp(max(UNVALIDATED_WIDENING * above, floor))}  # fmt: skip
    return out


def band_for(table: dict[str, Any], row: FigureRow) -> Band:
    """The band of the most specific group of ``row`` that the table holds, else unvalidated."""
    for key in group_keys(row):
        group = table["groups"].get(key)
        if group is not None:
            return Band(row.figure, group["low"], group["high"], key, group["rows"])
    unvalidated = table["unvalidated"]
    wide = unvalidated.get(f"{row.figure} · {'MoE' if row.moe else 'dense'}") or unvalidated[row.figure]
    return Band(row.figure, wide["low"], wide["high"], UNVALIDATED, 0)
