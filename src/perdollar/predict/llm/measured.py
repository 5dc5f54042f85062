"""Predictions of a language model's training, calibrated on the user's own bench runs of it.

``perdollar bench CONFIG.json --nproc N --plan fsdp`` on a GPU files its tokens/s under the model
(:func:`perdollar.workload.llm.trainable.measurement_key`). Each such run is predicted again at
its own GPU, process count, plan, micro-batch and precision; the median of measured ÷ predicted
is a whole-step factor that every prediction of the model then carries (``calibration_factor``,
basis ``calibrated``). Runs on a CPU, or on a GPU the catalog does not know, cannot say how the
model runs on a GPU and are left out, as are failed runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.measure.fsdp import SHARDING
from perdollar.measure.result import Measurement
from perdollar.predict.llm.plan import TrainingPlan
from perdollar.predict.llm.stage import LLMEfficiency
from perdollar.predict.llm.step import predict_llm_training
from perdollar.workload.llm.workload import LLMWorkload

# The plan a bench run recorded, read back from the FSDP sharding it ran.
SHARDING_STRATEGY = {sharding: strategy for strategy, sharding in SHARDING.items()}


@dataclass(frozen=True, slots=True)
class LLMTrainingCalibration:
    efficiency: LLMEfficiency
    runs: int  # bench runs that informed the factor
    note: str  # one sentence for the report ('' when nothing was calibrated)


def _predicted_for(
    run: Measurement, workload: LLMWorkload, accelerator: Accelerator, efficiency: LLMEfficiency
) -> float:
    processes = max(int(run.nproc or 1), 1)
    plan = TrainingPlan(
        strategy=SHARDING_STRATEGY.get(str(run.extra.get("sharding", "")), "ddp"),
        activation_checkpointing=bool(run.extra.get("activation_checkpointing", False)),
        micro_batch=max(int(run.batch_size), 1),
    )
    prediction = predict_llm_training(
        workload.architecture,
        accelerator,
        gpus_per_node=processes,
        nodes=1,
        plan=plan,
        seq_len=workload.seq_len,
        global_batch=plan.micro_batch * processes,
        precision=run.precision,
        efficiency=efficiency,
    )
    return float(prediction.tokens_per_second)


def calibrated(
    workload: LLMWorkload,
    measurements: list[Measurement],
    catalog: Catalog,
    base: LLMEfficiency | None = None,
) -> LLMTrainingCalibration:
    """The efficiency that reproduces the usable runs among ``measurements`` (median factor)."""
    efficiency = base or LLMEfficiency()
    ratios: list[float] = []
    gpus: set[str] = set()
    for run in measurements:
        measured = run.extra.get("tokens_per_second") if run.ok else None
        accelerator = catalog.accelerators.get(run.host.accelerator_key or "")
        if not measured or accelerator is None:
            continue
        try:
            predicted = _predicted_for(run, workload, accelerator, efficiency)
        except PerdollarError:  # a run the plan model cannot express (an odd process count, say)
            continue
        if predicted > 0:
            ratios.append(float(measured) / predicted)
            gpus.add(accelerator.key)
    if not ratios:
        return LLMTrainingCalibration(efficiency, 0, "")
    factor = statistics.median(ratios)
    note = (
        f"calibrated on {len(ratios)} bench run{'s' if len(ratios) != 1 else ''} of {workload.name} "
        f"({', '.join(sorted(gpus))}): measured ÷ predicted {factor:.2f}, applied to every estimate"
    )
    return LLMTrainingCalibration(
        replace(efficiency, calibration_factor=factor, basis="calibrated"), len(ratios), note
    )
