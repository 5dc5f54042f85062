"""A language model served over a day: the fleet per interval, priced, checked by replay.

Each request class of the load curve is sized on every instance type by the one capacity model
(:func:`perdollar.predict.llm_serving.frame.llm_serving_frame`); the fleets are chosen in
:mod:`perdollar.select.fleet` and replayed request by request against the predicted replicas.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.ask.inputs import Progress, quiet
from perdollar.ask.llm_serving import (
    FORMATS,
    _foreign_stacks_excluded,
    serving_goal,
    slo_label,
    with_default_ttft,
)
from perdollar.ask.near import near_notes
from perdollar.ask.offers import bill_notes, billed_offers, in_market, wants_committed
from perdollar.ask.policy import CARBON, check_policy
from perdollar.catalog import Catalog, bill_data
from perdollar.catalog.model import DEFAULT_INSTANCE_START_S
from perdollar.catalog.quotas import read_quotas
from perdollar.errors import NothingFeasibleError, PerdollarError
from perdollar.goals import ServingGoal
from perdollar.predict.llm_serving.engines import engine_note, serving_engine
from perdollar.predict.llm_serving.fleet import (
    IntervalReplay,
    Pool,
    ReplicaService,
    poisson_arrivals,
    replay_interval,
    replica_service,
    scale_up_seconds,
)
from perdollar.predict.llm_serving.formats import serving_format
from perdollar.predict.llm_serving.frame import llm_serving_frame
from perdollar.predict.llm_serving.load import RequestShape
from perdollar.predict.llm_serving.timing import GroupShape, weight_bytes_per_gpu
from perdollar.price.fleet import DAYS_PER_MONTH, Fleet, FleetOption, FleetPolicy, month_cost
from perdollar.price.fleet_floor import ROOM_FOR_ONE_RECLAIM, IntervalSurvival, fleet_survival
from perdollar.price.fleet_limits import co2e_g
from perdollar.price.fleet_options import POWER, class_capacities, fleet_options
from perdollar.price.llm_serving_energy import deployment_kw
from perdollar.question import LanguageModelSettings, Question
from perdollar.select.fleet import FleetChoice, RepairedFleet, choose_fleet, repaired_by_replay
from perdollar.workload.llm import load_llm_workload
from perdollar.workload.llm.architecture import DecoderArchitecture
from perdollar.workload.llm.load_curve import SECONDS_PER_DAY, LoadCurve, RequestClass


@dataclass(frozen=True)
class FleetAnswer:
    curve: LoadCurve
    choice: FleetChoice
    replay: tuple[IntervalReplay, ...]  # the chosen (mixed) fleet, interval by interval
    slo_label: str
    policy: FleetPolicy
    notes: tuple[str, ...]
    added_by_replay: tuple[int, ...] = ()  # instances the replay added, per interval
    survival: tuple[IntervalSurvival, ...] = ()  # the chosen fleet through spot reclaims, per interval

    @property
    def durations(self) -> list[float]:
        return [i.duration_s for i in self.curve.intervals]

    def output_tokens(self) -> float:
        classes = self.curve.classes
        return sum(
            i.duration_s * sum(r * c.output_tokens for r, c in zip(i.class_rates(), classes, strict=True))
            for i in self.curve.intervals
        )

    def all_tokens(self) -> float:
        classes = self.curve.classes
        return sum(
            i.duration_s
            * sum(
                r * (c.input_tokens + c.output_tokens) for r, c in zip(i.class_rates(), classes, strict=True)
            )
            for i in self.curve.intervals
        )

    def month_usd(self, fleet: Fleet) -> float:
        return month_cost(fleet, self.curve.span_s)

    def month_co2e_kg(self, fleet: Fleet) -> float | None:
        """Kilograms CO₂e a month (None where an option's emissions are unknown)."""
        grams = co2e_g(fleet, self.durations) * DAYS_PER_MONTH * SECONDS_PER_DAY / self.curve.span_s
        return grams / 1000 if math.isfinite(grams) else None

    def slo_met_share(self) -> float:
        return sum(r.meets_slo for r in self.replay) / len(self.replay) if self.replay else 0.0


def _options(
    arch: DecoderArchitecture, catalog: Catalog, question: Question, settings: LanguageModelSettings,
    curve: LoadCurve, instance_start_s: float,
) -> list[FleetOption]:  # fmt: skip
    if question.bill.horizon_months is not None or wants_committed(question.market, None):
        raise PerdollarError(
            "a fleet over a day scales by the hour, and a committed term bills every hour of its term",
            "leave out --horizon and committed markets (or ask for a steady deployment with --rps)",
        )
    # As the single deployment is billed: in its market, at the managed service's prices (first: a
    # quotas file that binds nothing is said before any work).
    offers = in_market(billed_offers(question, catalog, use="inference", priced_only=True), question)
    frames = []
    formats = (question.precision,) if question.precision else FORMATS
    goal = serving_goal(question)
    for request_class in curve.classes:
        frame = llm_serving_frame(
            arch, catalog, input_tokens=request_class.input_tokens, output_tokens=request_class.output_tokens,
            rps=curve.peak_rps, ttft_p99_ms=goal.limit_ms("ttft"), tpot_p99_ms=goal.limit_ms("tpot"),
            precisions=formats, engine=settings.engine, kv_precision=settings.kv_precision,
        )  # fmt: skip
        frame = _with_power(_foreign_stacks_excluded(frame, catalog), arch, catalog, request_class)
        frames.append(frame)
    capacities = class_capacities(frames)
    shares = _day_shares(curve)
    capacities[POWER] = sum(capacities[f"{POWER}_{c}"] * share for c, share in enumerate(shares))

    def scale_up(row: pd.Series) -> float:
        shape = GroupShape(tensor_parallel=int(row["tensor_parallel"]))
        weights = weight_bytes_per_gpu(arch, serving_format(str(row["precision"])), shape) * shape.gpus
        network = row.get("network_gbps")
        gbps = float(network) if network is not None and pd.notna(network) else None
        return scale_up_seconds(
            weights * int(row["replicas_per_instance"]), gbps, instance_start_s=instance_start_s
        )

    return fleet_options(capacities, offers, len(curve.classes), scale_up)


def _with_power(
    frame: pd.DataFrame, arch: DecoderArchitecture, catalog: Catalog, request_class: RequestClass
) -> pd.DataFrame:
    """``frame`` with the kW one instance of each deployment draws at the day's peak rate, as the
    single deployment's energy is priced (:func:`perdollar.price.llm_serving_energy.deployment_kw`)."""
    hosts = catalog.instances_frame()[["cloud", "instance_type", "vcpus"]].drop_duplicates(
        ["cloud", "instance_type"]
    )
    rows = frame.drop(columns=[c for c in ("vcpus",) if c in frame]).merge(
        hosts, on=["cloud", "instance_type"], how="left"
    )
    kw, _ = deployment_kw(
        rows, arch, input_tokens=request_class.input_tokens, output_tokens=request_class.output_tokens,
        accelerators=catalog.accelerators, factors=bill_data.energy_factors(),
    )  # fmt: skip
    instances = pd.to_numeric(rows["instances"], errors="coerce").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_instance = np.where(instances > 0, kw / instances, np.nan)
    return frame.assign(**{POWER: per_instance})


def _replay(
    arch: DecoderArchitecture, catalog: Catalog, curve: LoadCurve, fleet: Fleet,
    settings: LanguageModelSettings, goal: ServingGoal, requests_per_interval: int, intervals: Sequence[int],
) -> dict[int, IntervalReplay]:  # fmt: skip
    """The replay of each of ``intervals``; an interval's arrivals are the same whenever it is replayed."""
    works = [RequestShape(c.input_tokens, c.output_tokens) for c in curve.classes]
    services: dict[int, ReplicaService] = {}
    for index, option in enumerate(fleet.options):
        engine = serving_engine(option.engine or settings.engine)
        fmt = engine.serving_format(serving_format(option.precision), settings.kv_precision)
        services[index] = replica_service(
            arch, catalog.accelerator(option.accelerator_key), fmt, GroupShape(option.tensor_parallel), works,
            engine.step_efficiency(),
        )  # fmt: skip
    traced = np.array([r.arrival_s for r in curve.requests])
    traced_class = np.array([r.request_class for r in curve.requests], dtype=int)
    out = {}
    for h in intervals:
        interval = curve.intervals[h]
        if curve.requests:
            inside = (traced >= interval.start_s) & (traced < interval.start_s + interval.duration_s)
            arrivals = traced[inside][:requests_per_interval] - interval.start_s
            classes = traced_class[inside][:requests_per_interval]
        else:
            arrivals, classes = poisson_arrivals(
                interval.class_rates(), interval.duration_s, max_requests=requests_per_interval, seed=h
            )
        pools = [
            Pool(services[k], fleet.instances[h][k] * option.replicas_per_instance, fleet.routed[h][k])
            for k, option in enumerate(fleet.options)
        ]
        slo = {"ttft_p99_ms": goal.limit_ms("ttft"), "tpot_p99_ms": goal.limit_ms("tpot")}
        out[h] = replay_interval(arrivals, classes, pools, **slo, seed=h)
    return out


def answer_language_model_fleet(
    question: Question, curve: LoadCurve, *, catalog: Catalog, policy: FleetPolicy = FleetPolicy(),
    instance_start_s: float = DEFAULT_INSTANCE_START_S, requests_per_interval: int = 3000,
    progress: Progress = quiet,
) -> FleetAnswer:  # fmt: skip
    """The fleets that serve ``curve`` within the question's SLOs, cheapest mixed fleet replayed
    (by the question's objective: the one that emits least; within its quotas, every interval)."""
    check_policy(question)
    question, ttft_note = with_default_ttft(question)
    settings = question.language_model or LanguageModelSettings()
    features = (("--prefix-share", settings.prefix_share), ("--speculative", settings.speculative),
                ("--disaggregate", settings.disaggregate))  # fmt: skip
    for flag, value in features:
        if value is not None:  # the replay serves each request as the engine does without them
            raise PerdollarError(
                f"{flag} is predicted for a steady rate; a fleet over a day is replayed request by request"
                " without it",
                f"drop {flag} with --load-curve/--trace, or ask for its worth with --rps",
            )
    arch = load_llm_workload(question.workload_name, kind="inference").architecture
    progress(f"sizing replicas for {len(curve.classes)} request class(es) on every instance type")
    options = _options(arch, catalog, question, settings, curve, instance_start_s)
    quotas = read_quotas(Path(question.bill.quotas)) if question.bill.quotas else ()
    goal = serving_goal(question)
    policy = replace(policy, by_carbon=goal.objective == CARBON, quotas=quotas)
    rates = [i.class_rates() for i in curve.intervals]
    durations = [i.duration_s for i in curve.intervals]
    progress(f"choosing a fleet for {len(durations)} intervals from {len(options)} candidates")
    choice = choose_fleet(options, rates, durations, policy)
    label = slo_label(goal)
    if choice is None:
        raise _nothing_feasible(options, rates, durations, policy, label, question)
    progress("replaying the day against the chosen fleet")

    def replay_again(fleet: Fleet, intervals: Sequence[int]) -> dict[int, IntervalReplay]:
        return _replay(arch, catalog, curve, fleet, settings, goal, requests_per_interval, intervals)

    first = replay_again(choice.mixed, range(len(durations)))
    repaired = repaired_by_replay(choice.mixed, [first[h] for h in range(len(durations))], replay_again,
                                  durations, policy)  # fmt: skip
    choice = replace(choice, mixed=repaired.fleet)
    survival = fleet_survival(choice.mixed, durations)
    classes = "; ".join(
        f"{c.name}: {c.input_tokens} in, {c.output_tokens} out ({share:.0%})"
        for c, share in zip(curve.classes, _day_shares(curve), strict=True)
    )
    notes = (
        f"traffic from {curve.source}: {len(durations)} intervals; request classes {classes}",
        f"autoscaled to {policy.target_utilisation:.0%} of the SLO capacity, at least "
        f"{policy.min_replicas} replica(s); scale-ups started one delay ahead (instance start "
        f"{instance_start_s:.0f} s, assumed, + weights over min(network, disk)) and billed from then",
        f"spot: reclaim waves from the interruption share; spot capacity discounted by the wave where "
        f"a wave is likelier than {1 - policy.availability:.2%} of intervals; on-demand fallback priced",
        _floor_note(survival, policy, [_hour(i.start_s) for i in curve.intervals]),
        f"the mixed fleet: an integer program over {choice.short_list} of {choice.candidates} candidates",
        engine_note(settings.engine, settings.kv_precision),
        *ttft_note,
        *_repair_note(repaired),
        *_bill_notes(question, policy),
        *near_notes(
            question, _regions_of(options), _busiest_region(choice.mixed, durations), catalog.offers_frame()
        ),
    )
    return FleetAnswer(
        curve, choice, repaired.replay, label, policy, notes, repaired.added_instances, survival
    )


def _regions_of(options: Sequence[FleetOption]) -> pd.DataFrame:
    return pd.DataFrame({"cloud": [o.cloud for o in options], "region": [o.region for o in options]})


def _busiest_region(fleet: Fleet, durations: Sequence[float]) -> tuple[str, str] | None:
    """The (cloud, region) of the fleet's option with the most instance-hours."""
    hours = [sum(row[k] * d for row, d in zip(fleet.instances, durations, strict=True))
             for k in range(len(fleet.options))]  # fmt: skip
    if not hours:
        return None
    option = fleet.options[max(range(len(hours)), key=hours.__getitem__)]
    return option.cloud, option.region


def _hour(start_s: float) -> str:
    minutes = int(start_s // 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _floor_note(survival: Sequence[IntervalSurvival], policy: FleetPolicy, starts: Sequence[str]) -> str:
    """How the fleet rides out spot reclaims: its on-demand floor, and per interval the replicas
    one reclaim leaves against those the load needs."""
    rule = (
        "and, at 99% or more, room for one reclaim wherever spot serves (a lone spot replica runs on demand)"
        if policy.availability >= ROOM_FOR_ONE_RECLAIM
        else "(below 99% a lone spot replica may serve alone)"
    )
    shown = "; ".join(
        f"{start} {s.after_one_reclaim} of {s.needed_replicas} needed ({s.on_demand_instances} on demand)"
        for start, s in zip(starts, survival, strict=True)
    )
    least = min((s.kept_probability for s in survival), default=1.0)
    return (
        f"on-demand floor: each interval keeps the replicas its load needs through independent spot reclaims "
        f"(each pool's monthly rate) with probability ≥ {policy.availability:.2%} {rule}; the least likely "
        f"interval keeps them with {least:.3%}; replicas left after one spot reclaim, per interval: {shown}"
    )


def _nothing_feasible(
    options: Sequence[FleetOption], rates: Sequence[Sequence[float]], durations: Sequence[float],
    policy: FleetPolicy, label: str, question: Question,
) -> NothingFeasibleError:  # fmt: skip
    """Why no fleet was found: the quotas, when a fleet serves the day without them."""
    if policy.quotas:
        unbound = choose_fleet(options, rates, durations, replace(policy, quotas=()))
        if unbound is not None:
            fleet = unbound.mixed
            peak = max(range(len(rates)), key=fleet.replicas)
            gpus = sum(
                n * o.gpus_per_instance for n, o in zip(fleet.instances[peak], fleet.options, strict=True)
            )
            return NothingFeasibleError(
                f"the quotas of {question.bill.quotas} are too small for the day: no fleet within them "
                f"serves every interval within {label} (without them the busiest interval takes "
                f"{fleet.composition(peak)}, {gpus} GPUs)",
                "raise the quotas in the file, or allow more clouds, regions and markets",
            )
    what = " with known emissions" if policy.by_carbon else ""
    return NothingFeasibleError(
        f"no instance type{what} serves every request class within {label}",
        "relax the SLOs, shorten the requests, or allow more clouds and markets",
    )


def _bill_notes(question: Question, policy: FleetPolicy) -> tuple[str, ...]:
    """How the quotas, the objective and the managed service shaped the fleet."""
    notes = list(bill_notes(question, None, ""))
    if policy.quotas:
        notes.append(
            f"quotas: in every interval each family's instances × their GPUs within {question.bill.quotas}, "
            "spot and on-demand together (and the replay adds no instance beyond them)"
        )
    if policy.by_carbon:
        notes.append(
            "ranked by emissions (ties within the program's gap by cost): each instance-hour at the power "
            "the serving energy model gives one instance of its deployment at the day's peak rate, times the "
            "location-based grid intensity of its region; scale-ups emit from their start"
        )
    return tuple(notes)


def _repair_note(repaired: RepairedFleet) -> tuple[str, ...]:
    added = repaired.added_instances
    if not any(added):
        return ()
    missing = sum(not r.meets_slo for r in repaired.replay)
    still = f"; {missing} interval(s) still miss it" if missing else ""
    return (
        f"the replay found the plan short in {sum(1 for n in added if n)} interval(s): {sum(added)} "
        f"instance(s) added there, replayed again and included in the cost{still}",
    )


def _day_shares(curve: LoadCurve) -> list[float]:
    totals = [
        sum(i.class_rates()[c] * i.duration_s for i in curve.intervals) for c in range(len(curve.classes))
    ]
    return [t / sum(totals) for t in totals]
