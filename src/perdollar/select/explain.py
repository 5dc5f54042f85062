"""The why, in plain words built from the numbers of the ranked candidates."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perdollar.configuration import Configuration
from perdollar.fmt import format_hours, format_money, format_number, singular
from perdollar.price.frame import Target

OBJECTIVE_WORDS = {
    "samples-per-dollar": "samples per dollar",
    "time": "time to target",
    "cost": "cost to target",
    "weighted": "the weighted time/cost score",
    "carbon": "emissions (kg CO2e, location-based grid intensity)",
}


def describe(row: pd.Series) -> str:
    """``4x g5.2xlarge spot (aws us-east-1)``: the configuration's label."""
    parts = (str(row["instance_type"]), str(row["market"]), str(row["cloud"]), str(row["region"]))
    return Configuration(int(row["nodes"]), *parts).label


def _rate(row: pd.Series, unit: str) -> str:
    return f"{format_number(row['samples_per_second'])} {unit}/s ({row['basis']})"


def _per_dollar(row: pd.Series, unit: str) -> str:
    value = row.get("effective_samples_per_dollar", row["samples_per_dollar"])
    return f"{format_number(value)} {unit}/$"


def bound_sentence(row: pd.Series, unit: str) -> str:
    """What limits the top choice, and what would lift it."""
    bottleneck = str(row.get("bottleneck", ""))
    step = float(row.get("step_time_s") or 0.0)
    compute = float(row.get("compute_time_s") or 0.0)
    communication = float(row.get("communication_time_s") or 0.0)
    key = row.get("accelerator_key")
    chip = key if isinstance(key, str) and key else "the CPU"
    if bottleneck == "communication" and step > 0:
        link = (
            f"{float(row['network_gbps']):g} Gbps between {int(row['nodes'])} nodes"
            if int(row["nodes"]) > 1 and row.get("network_gbps") == row.get("network_gbps")
            else "the links inside the host"
        )
        return (
            f"Bound by communication: the exposed all-reduce is {communication / step:.0%} of the step over "
            f"{link}; fewer, larger nodes (or a faster fabric) would remove most of it."
        )
    if bottleneck in ("input-pipeline", "network-ingest") and step > 0 and compute > 0:
        uncapped = row["samples_per_second"] * step / (compute + communication)
        gain = uncapped / row["samples_per_second"] - 1.0
        what = (
            f"the {float(row.get('vcpus') or 0):g}-vCPU host's input pipeline"
            if bottleneck == "input-pipeline"
            else "network ingest from storage"
        )
        return (
            f"Bound by {what}: the accelerators could take {format_number(uncapped)} {unit}/s, "
            f"{gain:.0%} more, on a host with more vCPUs (or with cached/pre-processed input)."
        )
    if bottleneck == "memory-bandwidth":
        return f"Bound by {chip} memory bandwidth: a chip with faster memory, not a bigger host, would help."
    if bottleneck == "compute":
        return f"Bound by {chip} compute: the host is not the limit; only a faster chip would raise it."
    if bottleneck == "overhead":
        return "Bound by per-step overheads (kernel launches, small operators): a larger batch would help."
    return f"Bottleneck: {bottleneck or 'unknown'}."


def _ratio_words(mine: float, other: float, smaller_is_better: bool = True) -> str:
    if not (math.isfinite(mine) and math.isfinite(other)) or mine <= 0 or other <= 0:
        return "not comparable"
    ratio = other / mine if smaller_is_better else mine / other
    return f"{ratio:.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


def _bucket_words(row: pd.Series) -> str:
    bucket = row.get("interruption_bucket")
    if isinstance(bucket, str) and bucket:
        return f"Spot Advisor bucket {bucket}"
    return "rate unpublished, default assumed"


def _checkpoint_words(row: pd.Series) -> str:
    """How often the job checkpoints and what one interruption costs it in lost work.

    A job shorter than the interval its interruption rate asks for writes one final checkpoint:
    "every 3.7 d" for a 3.7-day job would read as advice to checkpoint that often.
    """
    interval = _number(row.get("checkpoint_interval_hours"))
    young_daly = _number(row.get("checkpoint_young_daly_hours"))
    lost = _number(row.get("lost_work_per_interruption_hours"))
    final_only = bool(row.get("checkpoint_final_only", False))
    loss = ""
    if lost is not None and interval:
        part = "the job" if final_only else "an interval"
        share = f"{lost / interval:.0%} of {part}"
        loss = f", an interruption losing {format_hours(lost)} of work on average ({share})"
    if final_only:
        rate = f" ({format_hours(young_daly)} at this interruption rate)" if young_daly else ""
        return f"one final checkpoint, as the job is shorter than a Young/Daly interval{rate}{loss}"
    return f"checkpoint every {format_hours(interval)} (Young/Daly at this interruption rate){loss}"


def _number(value: object) -> float | None:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _spot_sentence(row: pd.Series, target: Target) -> str:
    if row["market"] != "spot":
        return ""
    overhead = float(row.get("spot_overhead", 1.0))
    per_month = float(row.get("interruptions_per_hour") or 0.0) * 730
    text = (
        f"Spot risk priced in: {per_month:.2g} expected interruptions per month of running "
        f"({_bucket_words(row)}), {_checkpoint_words(row)}, {(overhead - 1) * 100:.2g}% time overhead"
    )
    if target.samples:
        expected = f"{format_hours(row['expected_time_hours'])} and {format_money(row['expected_cost_usd'])}"
        plain = f"{format_hours(row['time_to_target_hours'])} and {format_money(row['cost_to_target_usd'])}"
        # "instead of" only when the losses show at the printed precision: "23.6 h instead of
        # 23.6 h" reads as a slip.
        same = ", the same as without interruptions at this precision"
        text += f": expected {expected}" + (f" instead of {plain}" if plain != expected else same)
    return text + "."


def _headline(top: pd.Series, objective: str, target: Target, unit: str) -> str:
    text = (
        f"Top choice by {OBJECTIVE_WORDS[objective]}: {describe(top)} — {_rate(top, unit)}, "
        f"{top['bottleneck']}-bound, {format_money(top['price_per_hour'])}/h for all nodes "
        f"→ {_per_dollar(top, unit)}"
    )
    if target.samples:
        text += (
            f"; {format_hours(top['expected_time_hours'])} and {format_money(top['expected_cost_usd'])} "
            f"to {format_number(target.samples)} {unit}"
        )
        if target.deadline_hours:
            text += f"; P(done by {format_hours(target.deadline_hours)}) = {top['p_meet_deadline']:.2f}"
    return text + "."


def _fastest_sentence(fast: pd.Series, top: pd.Series, target: Target, unit: str) -> str:
    if target.samples:
        if fast["expected_time_hours"] > 0.98 * top["expected_time_hours"]:
            return (
                f"The fastest, {describe(fast)}, finishes about as soon "
                f"({format_hours(fast['expected_time_hours'])}) "
                f"for {format_money(fast['expected_cost_usd'])}."
            )
        sooner = _ratio_words(fast["expected_time_hours"], top["expected_time_hours"])
        dearer = _ratio_words(top["expected_cost_usd"], fast["expected_cost_usd"])
        return (
            f"The fastest, {describe(fast)}, finishes in {format_hours(fast['expected_time_hours'])} "
            f"({sooner} sooner) but costs {format_money(fast['expected_cost_usd'])} ({dearer} as much)."
        )
    speed = _ratio_words(fast["effective_samples_per_second"], top["effective_samples_per_second"], False)
    price = _ratio_words(top["effective_samples_per_dollar"], fast["effective_samples_per_dollar"], False)
    return f"The fastest, {describe(fast)}, runs {speed} as fast at {price} the cost per {singular(unit)}."


def _same_shape(ranked: pd.DataFrame, top: pd.Series, **changes: object) -> pd.Series | None:
    """The best ranked row of ``top``'s instance type with ``changes`` (e.g. the other market)."""
    mask = (ranked["cloud"] == top["cloud"]) & (ranked["instance_type"] == top["instance_type"])
    for column, value in {"market": top["market"], "nodes": top["nodes"], **changes}.items():
        mask &= ranked[column] == value
    rows = ranked.loc[mask]
    return None if rows.empty else rows.iloc[0]


def _alternatives_sentence(ranked: pd.DataFrame, top: pd.Series, unit: str) -> str:
    """How the same instance does in the other market and on one node: what the choice hinges on."""
    parts = []
    other_market = "on-demand" if top["market"] == "spot" else "spot"
    twin = _same_shape(ranked, top, market=other_market)
    if twin is not None:
        ratio = top["effective_samples_per_dollar"] / twin["effective_samples_per_dollar"]
        fewer = "fewer" if ratio > 1 else "more"
        parts.append(f"{other_market} gives {max(ratio, 1 / ratio):.2g}× {fewer} {unit} per dollar")
    if int(top["nodes"]) > 1:
        single = _same_shape(ranked, top, nodes=1)
        if single is not None:
            efficiency = top["samples_per_second"] / (int(top["nodes"]) * single["samples_per_second"])
            parts.append(f"{int(top['nodes'])} nodes scale at {efficiency:.0%} of linear")
    return ("Same instance: " + "; ".join(parts) + ".") if parts else ""


def explain(
    ranked: pd.DataFrame,
    ties: np.ndarray,
    objective: str,
    target: Target,
    unit: str,
    scores: np.ndarray,
    pool: pd.DataFrame | None = None,
) -> str:
    """Sentences about the top choice: what bounds it, runner-up, fastest, cheapest, what would flip it."""
    if ranked.empty:
        return "No candidate is feasible."
    top = ranked.iloc[0]
    lines = [_headline(top, objective, target, unit), bound_sentence(top, unit)]
    spot_text = _spot_sentence(top, target)
    if spot_text:
        lines.append(spot_text)

    # ``pool``: every feasible shape, not only the kept ones, to find the same instance's twins.
    alternatives = _alternatives_sentence(pool if pool is not None else ranked, top, unit)
    if alternatives:
        lines.append(alternatives)

    if len(ranked) > 1:
        runner = ranked.iloc[1]
        if ties[1]:
            when = ""
            if target.samples:
                when = (
                    f" ({format_hours(runner['expected_time_hours'])}, "
                    f"{format_money(runner['expected_cost_usd'])})"
                )
            lines.append(
                f"Runner-up {describe(runner)}{when} ties with it within the prediction bands "
                f"({int(ties.sum())} candidate(s) tie in all): the order among ties is not reliable; "
                f"measure them before committing (perdollar sweep)."
            )
        else:
            margin = scores[1] / scores[0] - 1.0 if scores[0] > 0 else float("nan")
            lines.append(
                f"Runner-up {describe(runner)} is {margin:.0%} worse on {OBJECTIVE_WORDS[objective]}; "
                f"it would win if its price fell by {margin / (1 + margin):.0%}."
            )

    time_column = "expected_time_hours" if target.samples else "effective_samples_per_second"
    time_values = ranked[time_column].to_numpy(dtype=np.float64)
    fastest_index = int(np.nanargmin(time_values) if target.samples else np.nanargmax(time_values))
    cost_column = "expected_cost_usd" if target.samples else "effective_samples_per_dollar"
    cost_values = ranked[cost_column].to_numpy(dtype=np.float64)
    cheapest_index = int(np.nanargmin(cost_values) if target.samples else np.nanargmax(cost_values))

    if fastest_index != 0:
        lines.append(_fastest_sentence(ranked.iloc[fastest_index], top, target, unit))
    else:
        lines.append("The top choice is also the fastest feasible candidate.")
    if cheapest_index != 0:
        cheap = ranked.iloc[cheapest_index]
        if target.samples:
            lines.append(
                f"The cheapest, {describe(cheap)}, costs {format_money(cheap['expected_cost_usd'])} "
                f"but takes {format_hours(cheap['expected_time_hours'])}."
            )
        else:
            per_dollar = _per_dollar(cheap, unit)
            lines.append(f"The cheapest per {singular(unit)}, {describe(cheap)}, gives {per_dollar}.")
    elif fastest_index != 0:
        lines.append("The top choice is also the cheapest feasible candidate.")

    if target.deadline_hours and target.samples:
        lines.append(
            f"A deadline shorter than about {format_hours(float(top['expected_time_hours_high']))} "
            f"would put it at risk (the slow end of its band)."
        )
    return "\n".join(lines)
