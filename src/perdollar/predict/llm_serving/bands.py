"""How far a serving figure can be trusted: an 80% band from the held-out error of rows like it.

The serving model's throughput, TTFT and TPOT are each checked against published figures with
every source held out of the fit that predicts it (benchmarks/llm_serving_bands.py). Those
held-out errors, grouped by figure, dense or mixture-of-experts, software stack, engine and chip
architecture, give each group a band in log(published / predicted).

A group's width comes from its rows each set against the group's other sources: a row's residual
is its error less the median error of the group's rows from other sources and, above the most
specific level, from the group's other members one level down (another architecture within an
engine, another engine within a stack), as a user's setup is a source, and often an engine or
chip, that the rows did not come from. The band is the group's median error plus the 5th to 95th
percentile of those residuals, and never narrower than the 5th to 95th percentile of the rows'
own errors. So a group whose sources disagree (two SGLang tables 2x apart, vLLM builds 2.9x apart)
gets the wide band its next source needs, where the rows' own spread had been narrow whenever
one source held most of them. Why the 5th to 95th and not the 10th to 90th: a source's rows err
together (one engine build, one harness), so the band of a new setup must be wider than the
rows' own 80% spread (benchmarks/RESULTS.md gives the coverage with each row's own source out).
A prediction takes the band of the most specific group with at least ``MIN_ROWS`` rows from
``MIN_SOURCES`` sources, falling back from (stack, engine, architecture) to (stack, engine) to the
stack alone. A prediction that no group of its figure, kind (dense or MoE) and stack covers was
never checked: it is ``unvalidated`` and takes the widest checked band of its figure with the log
widths doubled, at least a factor of two either way.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

BANDS_PATH = Path(__file__).resolve().parents[1] / "data" / "serving_bands.json"
LEVEL = 0.8
# Fewer rows than this put a 10th percentile on one or two rows: the parent group speaks instead.
MIN_ROWS = 8
# A source's rows share its setup (engine build, driver, harness): their errors move together, so
# a group of one or two sources says little about the next one, and its parent speaks instead.
MIN_SOURCES = 3
FIGURES = ("throughput", "ttft", "tpot")
# An unchecked prediction's band: the widest checked one with its log widths doubled, and never
# narrower than half to twice the prediction.
UNVALIDATED_WIDENING = 2.0
UNVALIDATED_FLOOR = 2.0
UNVALIDATED = "unvalidated"
# An engine's dated build is named after it: vllm@2024 (predict/llm_serving/builds.py). Its rows are
# the engine's: bands and builds are looked up by the engine alone.
BUILD_MARK = "@"


@dataclass(frozen=True, slots=True)
class FigureRow:
    """What a band is looked up by: the figure, and what kind of prediction it is."""

    figure: str  # throughput | ttft | tpot
    moe: bool
    stack: str  # the chip's software stack: cuda, rocm, xla, neuron …
    engine: str
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


def band_table(rows: Iterable[tuple[FigureRow, str, float]]) -> dict[str, Any]:
    """The stored table from held-out rows (what a row is, its source, log(predicted / published))."""
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
            "unvalidated": _unvalidated(groups)}  # fmt: skip


def _unvalidated(groups: dict[str, dict[str, Any]]) -> dict[str, dict[str, float]]:
    out = {}
    for figure in FIGURES:
        stack_level = [
            g for key, g in groups.items() if key.startswith(f"{figure} ·") and key.count("·") == 2
        ]
        below = max((-math.log(g["low"]) for g in stack_level), default=0.0)
        above = max((math.log(g["high"]) for g in stack_level), default=0.0)
        floor = math.log(UNVALIDATED_FLOOR)
        out[figure] = {"low": math.exp(-max(UNVALIDATED_WIDENING * below, floor)),
                       "high": math.exp(max(UNVALIDATED_WIDENING * above, floor))}  # fmt: skip
    return out


def band_for(table: dict[str, Any], row: FigureRow) -> Band:
    """The band of the most specific group of ``row`` that the table holds, else unvalidated."""
    for key in group_keys(row):
        group = table["groups"].get(key)
        if group is not None:
            return Band(row.figure, group["low"], group["high"], key, group["rows"])
    wide = table["unvalidated"][row.figure]
    return Band(row.figure, wide["low"], wide["high"], UNVALIDATED, 0)


@cache
def stored_table() -> dict[str, Any]:
    """The bundled table (benchmarks/llm_serving_bands.py --write)."""
    return json.loads(BANDS_PATH.read_text())


def serving_band(figure: str, *, moe: bool, stack: str, engine: str, family: str) -> Band:
    """The band of one figure of a serving prediction, from the bundled table."""
    return band_for(stored_table(), FigureRow(figure, moe, stack, engine.partition(BUILD_MARK)[0], family))


def serving_bands(*, moe: bool, stack: str, engine: str, family: str) -> dict[str, Band]:
    """Throughput, TTFT and TPOT bands of one prediction."""
    return {
        figure: serving_band(figure, moe=moe, stack=stack, engine=engine, family=family) for figure in FIGURES
    }


# The columns deployment_bands adds to the serving frame.
BAND_COLUMNS = (
    "band_group", "band_rows", "throughput_band_low", "throughput_band_high",
    "ttft_p99_ms_low", "ttft_p99_ms_high", "tpot_p99_ms_low", "tpot_p99_ms_high",
)  # fmt: skip


def deployment_bands(frame: Any, *, moe: bool, accelerators: Any) -> Any:
    """The serving frame (``llm_serving_frame``'s rows) with each row's bands: the throughput's as
    factors on what a replica serves, TTFT and TPOT around their p99s; the group named is the
    throughput's (the one that sets the cost)."""
    if frame.empty:
        return frame.assign(**{name: [] for name in BAND_COLUMNS})
    looked_up: dict[tuple[str, str], dict[str, Band]] = {}
    columns: dict[str, list[Any]] = {name: [] for name in BAND_COLUMNS}
    for key, engine, ttft, tpot in zip(frame["accelerator_key"], frame["engine"], frame["ttft_p99_ms"],
                                       frame["tpot_p99_ms"], strict=True):  # fmt: skip
        if (key, engine) not in looked_up:
            chip = accelerators[key]
            looked_up[(key, engine)] = serving_bands(moe=moe, stack=chip.software_stack, engine=str(engine),
                                                     family=chip.architecture)  # fmt: skip
        bands = looked_up[(key, engine)]
        throughput = bands["throughput"]
        columns["band_group"].append(throughput.group)
        columns["band_rows"].append(throughput.rows)
        columns["throughput_band_low"].append(throughput.low)
        columns["throughput_band_high"].append(throughput.high)
        for name, value in (("ttft", ttft), ("tpot", tpot)):
            low, high = bands[name].around(float(value))
            columns[f"{name}_p99_ms_low"].append(low)
            columns[f"{name}_p99_ms_high"].append(high)
    return frame.assign(**columns)


def cost_band(usd: Any, throughput_low: Any, throughput_high: Any) -> tuple[Any, Any]:
    """The cost per token's band: the replicas a rate needs scale as one over what each serves."""
    return usd / throughput_high, usd / throughput_low


@dataclass(frozen=True, slots=True)
class BuildSpeed:
    """How fast one year's dated builds of an engine ran against the prediction, held out."""

    year: str
    versions: tuple[str, ...]
    rows: int
    speed: float  # median published speed / predicted speed (below 1: slower than predicted)

    def document(self) -> dict[str, Any]:
        return {"year": self.year, "versions": list(self.versions), "rows": self.rows, "speed": self.speed}


def engine_builds(engine: str) -> tuple[BuildSpeed, ...]:
    """The dated builds of ``engine`` that held-out rows ran, oldest first (none where undated)."""
    years = stored_table().get("builds", {}).get(engine.partition(BUILD_MARK)[0], [])
    return tuple(BuildSpeed(b["year"], tuple(b["versions"]), b["rows"], b["speed"]) for b in years)


def builds_sentence(engine: str, version: str) -> str:
    """Which build the figures assume, and how the dated builds behind the bands ran against them
    (a dated build, ``vllm@2024``: its factor on today's build and the rows behind it)."""
    engine, _, year = engine.partition(BUILD_MARK)
    dated = [b for b in engine_builds(engine) if b.year == year]
    if dated:
        return (f"{engine} {year} builds: ×{dated[0].speed:.2f} of today's, from {dated[0].rows} held-out "
                f"rows ({', '.join(dated[0].versions)})")  # fmt: skip
    build = f"{engine} {version}" if version[:1].isdigit() else f"{engine} ({version})"
    assumed = f"the figures assume {build}"
    builds = engine_builds(engine)
    if not builds:
        return assumed
    ran = ", ".join(f"{b.year} builds {b.speed:.2g}× ({b.rows} rows)" for b in builds)
    return f"{assumed}; held out, {engine} ran at {ran} the predicted speed"
