"""How far a training figure can be trusted: an 80% band from the held-out error of runs like it.

Published and measured language-model training runs (GPU tables of LLM Foundry, Megatron, NeMo,
torchtitan, torchtune, the PEFT steps perdollar measured, MaxText on TPU, NxD Training on
Trainium) are each predicted by a fit that never saw their source (benchmarks/llm_training_bands.py).
Their errors of tokens per second, grouped by dense or mixture-of-experts, software stack,
framework and chip architecture, give each group a band (perdollar.predict.held_out_bands). Step
time and cost scale as one over tokens per second, so the one band serves all three. A prediction
takes its group's band and names it; where no group of its kind and stack was checked it is
``unvalidated``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from perdollar.catalog.model import Accelerator
from perdollar.predict.held_out_bands import Band, FigureRow, band_for
from perdollar.predict.held_out_bands import band_table as held_out_band_table
from perdollar.predict.params import shipped_model

BANDS_PATH = Path(__file__).resolve().parents[1] / "data" / "training_bands.json"
FIGURE = "training"  # tokens per second, and so step time and cost
# A compiled framework is named after its eager one (torchtune+compile): the rows of both are one group.
COMPILED_MARK = "+"


def band_table(rows: Iterable[tuple[FigureRow, str, float]]) -> dict[str, Any]:
    """The training table from held-out rows (what a row is, its source, log(predicted / published))."""
    # A dense run nothing like was checked takes the widest dense band, not the MoE one's (twice as wide).
    return held_out_band_table(rows, (FIGURE,), unvalidated_by_kind=True)


@cache
def stored_table() -> dict[str, Any]:
    """The bundled table (benchmarks/llm_training_bands.py --write)."""
    return json.loads(BANDS_PATH.read_text())


def framework_group(framework: str) -> str:
    """The framework a run is grouped under: the eager one's name for a compiled one."""
    return framework.partition(COMPILED_MARK)[0]


def training_band(*, moe: bool, stack: str, framework: str, family: str) -> Band:
    """The band of a training prediction's tokens per second, from the bundled table."""
    return band_for(stored_table(), FigureRow(FIGURE, moe, stack, framework_group(framework), family))


def prediction_band(basis: str, moe: bool, accelerator: Accelerator, framework: str) -> Band:
    """The band of a prediction on ``accelerator``: a spec prediction's is the held-out band of
    training runs like it; one calibrated on the user's own runs keeps the errors of its basis."""
    stack = accelerator.software_stack
    if basis == "spec":
        return training_band(moe=moe, stack=stack, framework=framework, family=accelerator.architecture)
    errors = shipped_model().errors_for(basis, stack)
    return Band(FIGURE, math.exp(errors.q10), math.exp(errors.q90), f"{basis} basis", errors.n)
