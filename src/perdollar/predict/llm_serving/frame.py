"""Every way to serve one LLM at a request rate on the catalog's instance types, ready to price.

One row per (instance type × tensor-parallel degree × format): how many replicas an instance
holds, the request rate each can take within the TTFT and TPOT SLOs (p99), how many replicas
the rate needs, and why a combination is out. Prices are left to the selection stage, which
joins these rows to offers on (cloud, instance_type).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm_serving.engines import (
    ANY_ENGINE,
    ServingEngine,
    engine_chip_problem,
    engine_choices,
    engines_on,
)
from perdollar.predict.llm_serving.expert_parallel import expert_parallel_problem
from perdollar.predict.llm_serving.features import Speculation
from perdollar.predict.llm_serving.formats import kv_precision_name, serving_format, with_kv_precision
from perdollar.predict.llm_serving.load import RequestShape, predict_llm_serving
from perdollar.predict.llm_serving.load_points import LoadPoint, load_points
from perdollar.predict.llm_serving.timing import DEFAULT_EFFICIENCY, GroupShape, ServingEfficiency
from perdollar.predict.parallel_limits import context_problem
from perdollar.workload.llm.architecture import DecoderArchitecture

# A replica is loaded to at most this share of its ceiling: beyond it the running batch hits the
# engine's cap and queues grow without bound on any burst.
MAX_UTILISATION = 0.90
_BISECTIONS = 24


@dataclass(frozen=True, slots=True)
class ReplicaRate:
    """The busiest load one replica takes within the SLOs, or why it cannot take any."""

    rate: float
    point: LoadPoint | None
    capacity: float
    max_output_tokens_per_second: float
    max_concurrent_sequences: int
    kv_cache_gib: float
    bottleneck: str
    excluded_reason: str


def replica_rate(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    precision: str,
    work: RequestShape,
    shape: GroupShape,
    *,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
    engine: ServingEngine | None = None,
    kv_precision: str | None = None,
) -> ReplicaRate:
    """``engine``: the engine's KV-cache default applies (``kv_precision`` overrides it)."""
    fmt = serving_format(precision)
    problem = engine.format_problem(fmt) if engine else ""
    fmt = engine.serving_format(fmt, kv_precision) if engine else with_kv_precision(fmt, kv_precision)
    if problem:
        return ReplicaRate(0.0, None, 0.0, 0.0, 0, 0.0, "unsupported-format", problem)
    top = predict_llm_serving(arch, accelerator, fmt, work, shape=shape, efficiency=efficiency)
    facts = (
        top.requests_per_second,
        top.output_tokens_per_second,
        top.max_concurrent_sequences,
        top.kv_cache_gib,
    )
    if not top.fits:
        return ReplicaRate(0.0, None, *facts, top.bottleneck, top.fit_reason)

    def meets(point: LoadPoint) -> bool:
        return (
            point.stable
            and (ttft_p99_ms is None or point.ttft_ms <= ttft_p99_ms)
            and (tpot_p99_ms is None or point.tpot_ms <= tpot_p99_ms)
        )

    point_at = load_points(arch, accelerator, fmt, work, shape=shape, efficiency=efficiency, ceiling=top)

    high = MAX_UTILISATION * top.requests_per_second
    best = point_at(high)
    if not meets(best):
        floor = point_at(1e-3 * top.requests_per_second)
        if not meets(floor):
            return ReplicaRate(
                0.0, floor, *facts, top.bottleneck, _slo_reason(floor, ttft_p99_ms, tpot_p99_ms)
            )
        low, best = floor.requests_per_second, floor
        for _ in range(_BISECTIONS):
            middle = (low + high) / 2
            point = point_at(middle)
            if meets(point):
                low, best = middle, point
            else:
                high = middle
    return ReplicaRate(best.requests_per_second, best, *facts, top.bottleneck, "")


def _slo_reason(point: LoadPoint, ttft_p99_ms: float | None, tpot_p99_ms: float | None) -> str:
    if ttft_p99_ms is not None and point.ttft_ms > ttft_p99_ms:
        return f"TTFT p99 {point.ttft_ms:.0f} ms even unloaded > the {ttft_p99_ms:g} ms SLO"
    return f"TPOT p99 {point.tpot_ms:.1f} ms even unloaded > the {tpot_p99_ms:g} ms SLO"


def llm_serving_frame(
    arch: DecoderArchitecture,
    catalog: Catalog,
    *,
    input_tokens: int,
    output_tokens: int,
    rps: float,
    ttft_p99_ms: float | None = None,
    tpot_p99_ms: float | None = None,
    precisions: Iterable[str] = ("fp16", "fp8", "int4"),
    tensor_parallel_options: Iterable[int] = (1, 2, 4, 8),
    efficiency: ServingEfficiency | None = None,
    engine: str | None = None,
    kv_precision: str | None = None,
    calibrated_engine: str | None = None,
    prefix_share: float = 0.0,
    speculation: Speculation | None = None,
) -> pd.DataFrame:
    """One row per (instance type × TP × precision) with at least one whole accelerator per replica.

    A degree the model's heads cannot be split over is a row excluded with that reason; a
    request longer than the model's context is refused outright. ``engine`` names the serving
    engine (None: the default engine; ``any``: a row per engine that runs on the chip);
    ``efficiency`` replaces the parameters of ``calibrated_engine`` (of every engine when None).
    A mixture-of-experts model is also laid out expert parallel over a row's GPUs (attention data
    parallel), and the row keeps whichever layout takes more requests.
    """
    too_long = context_problem(arch, input_tokens, output_tokens)
    if too_long:
        raise PerdollarError(
            too_long, "lower --input-tokens/--output-tokens, or choose a longer-context model"
        )
    work = RequestShape(input_tokens, output_tokens, prefix_share, speculation)
    setups = [(e, _engine_efficiency(e, arch, efficiency, calibrated_engine)) for e in engine_choices(engine)]
    instances = catalog.instances_frame()
    instances = instances[instances["accelerator_key"].notna() & (instances["accelerator_count"] >= 1)]
    cache: dict[tuple[str, int, str], list[Rated]] = {}
    rows = []
    for record in instances.itertuples(index=False):
        count = int(record.accelerator_count)
        accelerator = catalog.accelerator(str(record.accelerator_key))
        for degree in tensor_parallel_options:
            if degree > count:
                continue
            for precision in precisions:
                key = (accelerator.key, degree, precision)
                if key not in cache:
                    # Each engine's best layout is a row of its own, so ``any`` ranks every
                    # engine's deployments by the rules a run naming that engine uses.
                    here = [(e, eff) for e, eff in setups if accelerator.software_stack in e.stacks]
                    cache[key] = [_best_engine([(e, shape, replica_rate(
                        arch, accelerator, precision, work, shape,
                        ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms, efficiency=eff, engine=e,
                        kv_precision=kv_precision)) for shape in serving_layouts(arch, degree)])
                        for e, eff in here] or [_not_served(setups[0][0], accelerator, engine)]  # fmt: skip
                for chosen, shape, rate in cache[key]:
                    row = _row(record, count, degree, precision, rate, rps, work)
                    kv = chosen.serving_format(serving_format(precision), kv_precision)
                    rows.append({**row, "engine": chosen.name, "kv_precision": kv_precision_name(kv),
                                 "expert_parallel": shape.expert_parallel})  # fmt: skip
    return pd.DataFrame(rows)


def _engine_efficiency(
    engine: ServingEngine, arch: DecoderArchitecture, efficiency: ServingEfficiency | None,
    calibrated_engine: str | None,
) -> ServingEfficiency:  # fmt: skip
    """The engine's own parameters, or the calibrated ones where the calibration measured it."""
    if efficiency is not None and calibrated_engine in (None, engine.name):
        return efficiency
    return engine.step_efficiency()


def serving_layouts(arch: DecoderArchitecture, gpus: int) -> tuple[GroupShape, ...]:
    """The layouts a replica of ``gpus`` GPUs is tried in: tensor parallel over all of them, and for a
    mixture-of-experts model experts split over them with attention data parallel."""
    tensor = GroupShape(tensor_parallel=gpus)
    if gpus <= 1 or expert_parallel_problem(arch, 1, gpus):
        return (tensor,)
    return (tensor, GroupShape(tensor_parallel=1, expert_parallel=gpus))


Rated = tuple[ServingEngine, GroupShape, ReplicaRate]


def _not_served(first: ServingEngine, accelerator: Accelerator, engine: str | None) -> Rated:
    """A row that no engine asked for serves on this chip, with the reason naming the chip's engines."""
    if engine is not None and engine.strip().lower() == ANY_ENGINE:
        reason = (f"none of the GPU engines runs on {accelerator.key}; engines for {accelerator.key}: "
                  f"{', '.join(engines_on(accelerator)) or 'none is modelled'}")  # fmt: skip
    else:
        reason = engine_chip_problem(first.name, accelerator)
    return first, GroupShape(), ReplicaRate(0.0, None, 0.0, 0.0, 0, 0.0, "unsupported-engine", reason)


def _best_engine(rated: list[Rated]) -> Rated:
    """The engine and layout whose replica takes the most requests within the SLOs (the first when
    none can)."""
    feasible = [choice for choice in rated if not choice[2].excluded_reason]
    return max(feasible, key=lambda choice: choice[2].rate) if feasible else rated[0]


def _row(
    record: object, count: int, degree: int, precision: str, rate: ReplicaRate, rps: float, work: RequestShape
) -> dict:
    # The machine's own exclusion (retired, desktop-only) comes before anything about the model.
    machine_reason = str(getattr(record, "excluded_reason", "") or "")
    excluded = machine_reason or rate.excluded_reason
    feasible = not excluded and rate.rate > 0
    replicas = math.ceil(rps / rate.rate) if feasible else 0
    per_instance = count // degree
    point = rate.point
    return {
        "cloud": record.cloud,  # type: ignore[attr-defined]
        "instance_type": record.instance_type,  # type: ignore[attr-defined]
        "accelerator_key": record.accelerator_key,  # type: ignore[attr-defined]
        "accelerator_count": count,
        "tensor_parallel": degree,
        "precision": precision,
        "replicas_per_instance": per_instance,
        "replicas": replicas,
        "instances": math.ceil(replicas / per_instance) if feasible else 0,
        "batch": point.batch if point and feasible else math.nan,
        "ttft_p99_ms": point.ttft_ms if point else math.nan,
        "tpot_p99_ms": point.tpot_ms if point else math.nan,
        "capacity_per_replica": rate.capacity,  # requests/s at the ceiling
        "slo_rate_per_replica": rate.rate if feasible else 0.0,  # the busiest rate within the SLOs
        "rate_per_replica": rps / replicas if feasible else math.nan,
        "utilisation": rps / replicas / rate.capacity if feasible else math.nan,
        "output_tokens_per_second_per_replica": rps / replicas * work.output_tokens if feasible else math.nan,
        "max_output_tokens_per_second_per_replica": rate.max_output_tokens_per_second,
        "output_tokens_per_second": rps * work.output_tokens,
        "input_tokens_per_second": rps * work.input_tokens,
        "max_concurrent_sequences": rate.max_concurrent_sequences,
        "kv_cache_gib": rate.kv_cache_gib,
        "basis": "spec",
        "bottleneck": rate.bottleneck,
        "feasible": feasible,
        "excluded_reason": excluded,
    }
