"""How far a serving figure can be trusted: an 80% band from the held-out error of rows like it.

The serving model's throughput, TTFT and TPOT are each checked against published figures with
every source held out of the fit that predicts it (benchmarks/llm_serving_bands.py). Those
held-out errors, grouped by figure, dense or mixture-of-experts, software stack, engine and chip
architecture, give each group a band (perdollar.predict.held_out_bands: how a group's width comes
from its rows set against its other sources, and which group a prediction takes). So a group whose
sources disagree (two SGLang tables 2x apart, vLLM builds 2.9x apart) gets a band as wide as the
disagreement; benchmarks/RESULTS.md gives the coverage with each row's own source left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from perdollar.predict.held_out_bands import (  # noqa: F401  (re-exported: the serving table's readers)
    LEVEL,
    MIN_ROWS,
    MIN_SOURCES,
    UNVALIDATED,
    Band,
    FigureRow,
    band_for,
    group_keys,
)
from perdollar.predict.held_out_bands import band_table as held_out_band_table

BANDS_PATH = Path(__file__).resolve().parents[1] / "data" / "serving_bands.json"
FIGURES = ("throughput", "ttft", "tpot")
# An engine's dated build is named after it: vllm@2024 (predict/llm_serving/builds.py). Its rows are
# the engine's: bands and builds are looked up by the engine alone.
BUILD_MARK = "@"


def band_table(rows: Iterable[tuple[FigureRow, str, float]]) -> dict[str, Any]:
    """The serving table from held-out rows (what a row is, its source, log(predicted / published))."""
    return held_out_band_table(rows, FIGURES)


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
