"""A language model's serving question, answered: per instance type, tensor-parallel degree and
format, the replicas that serve the rate within TTFT and TPOT, priced per million tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from perdollar.ask.inputs import Progress, quiet
from perdollar.ask.near import chosen_region, near_notes
from perdollar.ask.offers import (
    bill_notes,
    billed_offers,
    in_market,
    left_out_notes,
    quota_excluded,
    same_machine,
)
from perdollar.ask.policy import check_policy
from perdollar.catalog import Catalog
from perdollar.errors import PerdollarError
from perdollar.goals import TOKEN_LATENCY_QUANTILE, FleetGoal, LatencyObjective, ServingGoal, served
from perdollar.measure.result import Measurement
from perdollar.predict.frame import SUPPORTED_STACKS
from perdollar.predict.llm_serving.bands import builds_sentence, deployment_bands
from perdollar.predict.llm_serving.calibrate import (
    ServingCalibration,
    calibrate,
    reading_of,
    refused_readings,
)
from perdollar.predict.llm_serving.engines import (
    ANY_ENGINE,
    DEFAULT_ENGINE,
    STACK_ENGINES,
    engine_key,
    engine_note,
    serving_engine,
)
from perdollar.predict.llm_serving.features import (
    checked_prefix_share,
    checked_speculation,
    feature_notes,
    speculation,
)
from perdollar.predict.llm_serving.formats import serving_format
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.predict.llm_serving.load import RequestShape
from perdollar.predict.llm_serving.timing import GroupShape, weight_bytes_per_gpu
from perdollar.predict.nongpu_llm import nongpu_serving_rows
from perdollar.price.bill import DataPlacement
from perdollar.price.llm_serving import price_llm_deployments
from perdollar.price.llm_serving_bill import ServedRequests, describe_serving_bill, with_serving_bill
from perdollar.price.network_serving import ranked, spot_extra_instances
from perdollar.price.placement import data_placement
from perdollar.question import LanguageModelSettings, Question
from perdollar.select.llm_serving import explain_llm_serving, llm_deployment_estimates
from perdollar.select.llm_serving_ties import cost_ties, ties_sentence, with_cost_band
from perdollar.select.model import Recommendation
from perdollar.select.ranking import with_price_sentences
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import DecoderArchitecture

DEFAULT_INPUT_TOKENS = 1000
DEFAULT_OUTPUT_TOKENS = 300
FORMATS = ("fp16", "fp8", "int4")
# The column a deployment is ranked by, and the tie-break, for each objective ("": the default).
RANKED_BY = {
    "": ("usd_per_million_output_tokens", "ttft_p99_ms"),
    "carbon": ("co2e_g_per_million_output_tokens", "usd_per_million_output_tokens"),
}


@dataclass(frozen=True)
class LanguageModelServingAnswer:
    recommendation: Recommendation
    frame: pd.DataFrame  # every offer × degree × format, ranked, with its plan or exclusion
    slo_label: str


# Without a TTFT limit a deployment whose first token takes a minute would rank on its cost alone: a
# chat user abandons a reply long before that, so an unstated limit is this ceiling, and says so.
DEFAULT_TTFT_P99_MS = 10_000.0


def with_default_ttft(question: Question) -> tuple[Question, tuple[str, ...]]:
    """``question`` with the default TTFT ceiling where it states none, and the note that says so."""
    goal = serving_goal(question)
    if goal.limit_ms("ttft") is not None:
        return question, ()
    ceiling = LatencyObjective("ttft", TOKEN_LATENCY_QUANTILE, DEFAULT_TTFT_P99_MS)
    goal = replace(goal, objectives=(ceiling, *goal.objectives))
    note = (
        f"no --ttft-p99-ms given: deployments whose p99 time to first token exceeds "
        f"{DEFAULT_TTFT_P99_MS / 1000:g} s are left out (give --ttft-p99-ms to set your own limit)"
    )
    fleet = question.goal
    return replace(question, goal=replace(fleet, serving=goal) if isinstance(fleet, FleetGoal) else goal), (
        note,
    )


def serving_goal(question: Question) -> ServingGoal:
    """The rate and latency objectives a language model is served within (a fleet's: the day's mean)."""
    goal = served(question.goal)
    if goal is None or not goal.qps > 0:
        raise PerdollarError(
            "serving a language model needs a request rate", "add --rps 20 (or --tokens-per-day)"
        )
    return goal


def slo_label(goal: ServingGoal) -> str:
    parts = []
    ttft, tpot = goal.limit_ms("ttft"), goal.limit_ms("tpot")
    if ttft is not None:
        parts.append(f"TTFT p99 ≤ {ttft:g} ms")
    if tpot is not None:
        parts.append(f"TPOT p99 ≤ {tpot:g} ms")
    return ", ".join(parts) or "no latency objective"


def answer_language_model_serving(
    question: Question,
    *,
    catalog: Catalog,
    progress: Progress = quiet,
    measurements: Sequence[Measurement] = (),
) -> LanguageModelServingAnswer:
    """``measurements``: stored ``serve-bench WORKLOAD --url`` runs of this model; they calibrate."""
    check_policy(question)
    question, ttft_note = with_default_ttft(question)
    settings = question.language_model or LanguageModelSettings()
    serving = serving_goal(question)
    workload = load_llm_workload(question.workload_name, kind="inference")
    question = replace(question, workload_fingerprint=workload.fingerprint)
    rps = serving.qps
    input_tokens = settings.input_tokens or DEFAULT_INPUT_TOKENS
    output_tokens = settings.output_tokens or DEFAULT_OUTPUT_TOKENS
    every_market = billed_offers(question, catalog, use="inference", priced_only=True)
    offers = in_market(every_market, question)
    formats = (question.precision,) if question.precision else FORMATS
    spec = checked_speculation(
        speculation(settings.speculative, settings.acceptance, settings.speculative_tokens),
        workload.architecture,
    )
    prefix = checked_prefix_share(settings.prefix_share)
    if settings.disaggregate is not None:
        raise PerdollarError(
            "the deployment search sizes colocated replicas; --disaggregate is predicted for one layout",
            "use perdollar predict CONFIG --inference --disaggregate 1P3D --accelerator … --gpus …",
        )
    calibration, refused = endpoint_calibration(measurements, workload.architecture, catalog, settings.engine)
    progress(f"sizing {workload.name} replicas on every instance type, tensor-parallel degree and format")
    deployments = llm_serving_frame(
        workload.architecture,
        catalog,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        rps=rps,
        ttft_p99_ms=serving.limit_ms("ttft"),
        tpot_p99_ms=serving.limit_ms("tpot"),
        precisions=formats,
        efficiency=calibration.efficiency if calibration else None,
        engine=settings.engine,
        kv_precision=settings.kv_precision,
        calibrated_engine=calibration.engine if calibration else None,
        prefix_share=prefix,
        speculation=spec,
    )
    if calibration is not None:
        # Only the measured engine's rows moved: another engine's rows stay on the shipped fit.
        measured_engine = deployments["engine"].astype(str).str.lower() == calibration.engine.lower()
        deployments = deployments.assign(basis=deployments["basis"].where(~measured_engine, "calibrated"))
    deployments = _foreign_stacks_excluded(deployments, catalog)
    deployments = _with_own_stacks(deployments, workload.architecture, catalog, RequestShape(
        input_tokens, output_tokens, prefix, spec), serving, settings, formats)  # fmt: skip
    deployments = deployment_bands(
        deployments, moe=workload.architecture.is_moe, accelerators=catalog.accelerators
    )
    frame = price_llm_deployments(
        deployments,
        offers,
        output_tokens_per_second=rps * output_tokens,
        input_tokens_per_second=rps * input_tokens,
        spot_overprovision=serving.spot_overprovision,
    )
    frame, placement = _with_bill(frame, question, catalog, workload.architecture,
                                  ServedRequests(input_tokens, output_tokens))  # fmt: skip
    if question.bill.quotas:
        frame = quota_excluded(frame, question, "instances")
    if question.bill.quotas or serving.objective == "carbon":
        frame = ranked(frame, *RANKED_BY.get(serving.objective, RANKED_BY[""]))
    label = slo_label(serving)
    frame = with_cost_band(frame)
    estimates = llm_deployment_estimates(frame, rps, label, by_carbon=serving.objective == "carbon")
    created_at = pd.Timestamp.now(tz="UTC").isoformat(timespec="seconds")
    explanation = explain_llm_serving(frame, rps, label, by_carbon=serving.objective == "carbon")
    ties = () if serving.objective == "carbon" else cost_ties(estimates)
    recommendation = Recommendation(
        question=question,
        estimates=estimates,
        pareto=tuple(range(min(sum(1 for e in estimates if e.feasible), 1))),
        ties=ties,
        explanation=with_price_sentences(explanation + ties_sentence(estimates, ties), estimates, created_at),
        catalog_captured_at=str(catalog.captured_at),
        catalog_snapshot_id=str(catalog.snapshot_id),
        created_at=created_at,
        notes=(
            f"{input_tokens} tokens in, {output_tokens} out per request; replicas loaded to at most 90% "
            "of their ceiling; continuous batching (prefill and decode in one iteration)",
            engine_note(settings.engine, settings.kv_precision),
            *_builds_note(frame),
            *ttft_note,
            *feature_notes(prefix, spec, moe=workload.architecture.is_moe),
            *([calibration.describe(workload.name)] if calibration and _moves(calibration, settings) else []),
            *refused,
            *_bill_notes(question, every_market, frame),
            *left_out_notes(every_market, question),
            *near_notes(question, every_market, chosen_region(frame), catalog.offers_frame()),
            describe_serving_bill(placement),
        ),
        sample_unit="output tokens",
    )
    return LanguageModelServingAnswer(recommendation, frame, label)


def _builds_note(frame: pd.DataFrame) -> tuple[str, ...]:
    """Which build of the top deployment's engine the figures assume, and how dated builds ran."""
    feasible = frame[frame["feasible"]]
    if feasible.empty:
        return ()
    engine = str(feasible.iloc[0]["engine"])
    try:
        version = serving_engine(engine).version
    except PerdollarError:
        return ()
    return (builds_sentence(engine, version),)


def _with_bill(frame: pd.DataFrame, question: Question, catalog: Catalog, arch: DecoderArchitecture,
               requests: ServedRequests) -> tuple[pd.DataFrame, DataPlacement]:  # fmt: skip
    """The deployments with their energy, carbon and weights pull, and where the weights are stored
    (``--data-region``: what every instance pulls them from)."""
    if question.data.dataset_bytes:
        raise PerdollarError(
            "--dataset-size is a training dataset's size; a served model's weights are sized from the model",
            "drop --dataset-size (--data-region alone says where the weights are stored)",
        )
    weights = {str(name): weight_bytes_per_gpu(arch, serving_format(str(name)), GroupShape())
               for name in frame["precision"].dropna().unique()}  # fmt: skip
    placement = DataPlacement()
    if weights and question.data.data_region:
        stored = replace(question.data, dataset_bytes=max(weights.values()))
        placement = data_placement(stored, catalog, 0.0)
    billed = with_serving_bill(frame, arch, requests, accelerators=catalog.accelerators,
                               weights_bytes=weights, placement=placement)  # fmt: skip
    return billed, placement


def _moves(calibration: ServingCalibration, settings: LanguageModelSettings) -> bool:
    """Whether the question's engine (or, for ``any``, one of its engines) is the one measured."""
    asked = (settings.engine or DEFAULT_ENGINE).lower()
    return asked == ANY_ENGINE or asked == calibration.engine.lower()


def _bill_notes(question: Question, offers: pd.DataFrame, frame: pd.DataFrame) -> tuple[str, ...]:
    """The top deployment's bill in every market: its instances at each rate, spot spares added."""
    feasible = frame[frame["feasible"]]
    if feasible.empty:
        return bill_notes(question, None, "")
    top = feasible.iloc[0]
    needed = int(top["instances"]) - int(top["spot_extra_instances"])
    rows = same_machine(offers, top)
    goal = served(question.goal)
    overprovision = goal.spot_overprovision if goal else None
    buckets = rows["interruption_bucket"].tolist()
    spares = spot_extra_instances(np.full(len(rows), needed), buckets, overprovision)
    count = np.where(rows["market"].to_numpy() == "spot", needed + spares, needed)
    bill = rows["price_per_hour"].to_numpy() * count
    bills = pd.DataFrame({"market": rows["market"], "usd_per_hour": bill})
    plan = f"tp{int(top['tensor_parallel'])}+{top['precision']}"
    where = f"{top['cloud']} {top['region']}"
    label = f"{needed}x {top['instance_type']} {plan} ({where}; spot adds its spares)"
    return bill_notes(question, bills, label)


def endpoint_calibration(measurements: Sequence[Measurement], arch: DecoderArchitecture, catalog: Catalog,
                 engine_name: str | None) -> tuple[ServingCalibration | None, tuple[str, ...]]:  # fmt: skip
    """The calibration from the stored endpoint runs, and why any run beyond physics was not used.

    A run that names no engine is taken to be of the engine the question asks about.
    """
    readings = [r for r in map(reading_of, measurements) if r is not None]
    if not readings:
        return None, ()
    chips = {r.accelerator_key: catalog.accelerators[r.accelerator_key]
             for r in readings if r.accelerator_key in catalog.accelerators}  # fmt: skip
    asked = engine_name if engine_name and engine_name.lower() != ANY_ENGINE else None
    engine = serving_engine(readings[0].engine or asked)
    return calibrate(readings, arch, chips, engine.step_efficiency(), engine=engine.name), refused_readings(
        readings, arch, chips
    )


def _foreign_stacks_excluded(deployments: pd.DataFrame, catalog: Catalog) -> pd.DataFrame:
    """Chips whose serving stack the model was not fitted on (Neuron, XLA …) are out, with the reason."""
    stacks = deployments["accelerator_key"].map(lambda key: catalog.accelerators[key].software_stack)
    foreign = ~stacks.isin(SUPPORTED_STACKS) & deployments["feasible"]
    if not foreign.any():
        return deployments
    out = deployments.copy()
    out.loc[foreign, "feasible"] = False
    out.loc[foreign, "excluded_reason"] = stacks[foreign].map(
        lambda stack: f"needs a {stack} serving stack; perdollar models CUDA and ROCm serving engines"
    )
    return out


def _with_own_stacks(deployments: pd.DataFrame, arch: DecoderArchitecture, catalog: Catalog,
                     work: RequestShape,
                     goal: ServingGoal, settings: LanguageModelSettings,
                     formats: tuple[str, ...]) -> pd.DataFrame:  # fmt: skip
    """Non-GPU chips' rows from their own serving stacks (Neuron, JetStream …), replacing the GPU
    engines' rows for them; a GPU engine the user named keeps them out (the frame says why), and a
    stack's engine named (nxd-inference …) keeps only that stack's chips."""
    named = engine_key(settings.engine) if settings.engine and settings.engine.lower() != ANY_ENGINE else None
    if named is not None and named not in STACK_ENGINES:
        return deployments
    ttft, tpot = goal.limit_ms("ttft"), goal.limit_ms("tpot")
    own = nongpu_serving_rows(arch, catalog, input_tokens=work.input_tokens, output_tokens=work.output_tokens,
                              rps=goal.qps, ttft_p99_ms=ttft, tpot_p99_ms=tpot,
                              precisions=formats, prefix_share=work.prefix_share,
                              speculation=work.speculation, kv_precision=settings.kv_precision)  # fmt: skip
    if named is not None and not own.empty:
        own = own[own["engine"] == named]
    if own.empty:
        return deployments
    gpu = deployments[~deployments["accelerator_key"].isin(set(own["accelerator_key"]))]
    columns = [*deployments.columns, *(["fit_note"] if "fit_note" not in deployments.columns else [])]
    return pd.concat([gpu, own.reindex(columns=columns)], ignore_index=True)
