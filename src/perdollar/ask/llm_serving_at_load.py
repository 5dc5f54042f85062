"""A served language model at the load its users state (``predict --inference --concurrency/--rps``).

The replica's shape, engine and fit come from the maximum-load prediction; the load figures from
:mod:`perdollar.predict.llm_serving.offered_load`, under the chosen engine's defaults and token
budget. The prediction's rates become those served at that load, its band kept in proportion.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from perdollar.errors import PerdollarError

if TYPE_CHECKING:
    from perdollar.catalog.model import Accelerator
    from perdollar.predict.llm_serving.disaggregate import Disaggregation
    from perdollar.predict.llm_serving.formats import ServingFormat
    from perdollar.predict.llm_serving.load import LLMServingPrediction, RequestShape
    from perdollar.predict.llm_serving.offered_load import LoadFigures, OfferedLoad
    from perdollar.predict.llm_serving.shape import GroupShape
    from perdollar.workload.llm.architecture import DecoderArchitecture


def refuse_a_second_load(load: OfferedLoad | None, batch: int | None, split: Disaggregation | None) -> None:
    """One load at a time: a static batch and a disaggregated pair are loads of their own."""
    if load is None:
        return
    flag = "--concurrency" if load.concurrency is not None else "--rps"
    if batch is not None:
        raise PerdollarError(
            f"--batch and {flag} each fix the load",
            "give one of --batch (a static batch), --concurrency or --rps",
        )
    if split is not None:
        raise PerdollarError(
            f"{flag} is modelled on replicas that prefill and decode together, not {split.label}",
            f"drop --disaggregate (or drop {flag} for the pools at full load)",
        )


def at_load(
    arch: DecoderArchitecture, chip: Accelerator, fmt: ServingFormat, work: RequestShape, shape: GroupShape,
    replicas: int, result: LLMServingPrediction, kv_precision: str | None, load: OfferedLoad,
) -> tuple[LLMServingPrediction, LoadFigures | None]:  # fmt: skip
    """``result`` (the replica at maximum load) with the rates served at ``load``, and the figures."""
    from perdollar.predict.llm_serving.engines import serving_engine
    from perdollar.predict.llm_serving.offered_load import at_offered_load, prefill_token_budget

    if not result.fits:
        return result, None
    engine = serving_engine(result.engine)
    budget = prefill_token_budget(engine.name, chip)
    held = engine.serving_format(fmt, kv_precision)
    figures = at_offered_load(
        arch, chip, held, work, load, running_cap=max(int(result.batch), 1), budget=budget, shape=shape,
        replicas=replicas, efficiency=engine.step_efficiency(),
    )  # fmt: skip
    tokens = figures.output_tokens_per_second / replicas
    share = tokens / result.output_tokens_per_second if result.output_tokens_per_second else 0.0
    served = replace(
        result,
        output_tokens_per_second=tokens,
        output_tokens_per_second_low=result.output_tokens_per_second_low * share,
        output_tokens_per_second_high=result.output_tokens_per_second_high * share,
        requests_per_second=figures.requests_per_second / replicas,
        batch=figures.mean_running,
        mode=load.mode,
        # Per output token at this load (the median request); the maximum-load step's otherwise.
        tpot_ms=result.tpot_ms if figures.over_capacity else figures.tpot_ms.p50,
    )
    return served, figures
