"""Turn rows of the candidate and deployment tables into :class:`~perdollar.price.model.Estimate` records."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, SupportsFloat, TypedDict

import pandas as pd

from perdollar.predict.held_out_bands import UNVALIDATED
from perdollar.price.frame import Target
from perdollar.price.model import Estimate, ServingFigures
from perdollar.vocabulary import SECONDS_PER_HOUR


def _number(value: object) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _text(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def estimates_from_frame(
    frame: pd.DataFrame, target: Target, reasons: Sequence[str] | None = None
) -> list[Estimate]:
    """One Estimate per row; ``reasons`` gives the exclusion sentence of each row (feasible: none)."""
    records = frame.to_dict("records")
    estimates: list[Estimate] = []
    for index, row in enumerate(records):
        reason = reasons[index] if reasons is not None else ""
        flags = tuple(f for f in _text(row.get("flags")).split(";") if f)
        estimates.append(
            Estimate(
                cloud=str(row["cloud"]),
                instance_type=str(row["instance_type"]),
                region=str(row["region"]),
                market=str(row["market"]),
                nodes=int(row["nodes"]),
                accelerator=_text(row.get("accelerator_key")) or None,
                accelerators_per_node=float(row.get("accelerators_per_node") or 0.0),
                samples_per_second=float(row["samples_per_second"]),
                samples_per_second_low=float(row["samples_per_second_low"]),
                samples_per_second_high=float(row["samples_per_second_high"]),
                basis=row["basis"],
                bottleneck=_text(row.get("bottleneck")),
                price_per_hour=float(row["price_per_hour"]),
                samples_per_dollar=float(row["samples_per_dollar"]),
                time_to_target_hours=_number(row.get("time_to_target_hours")),
                cost_to_target_usd=_number(row.get("cost_to_target_usd")),
                expected_time_hours=_number(row.get("expected_time_hours")),
                expected_cost_usd=_number(row.get("expected_cost_usd")),
                p_meet_deadline=_number(row.get("p_meet_deadline")) if target.deadline_hours else None,
                fits=bool(row.get("fits", True)),
                excluded_reason=reason,
                interruption_bucket=_text(row.get("interruption_bucket")) or None,
                checkpoint_interval_hours=_number(row.get("checkpoint_interval_hours")),
                captured_at=_text(row.get("captured_at")),
                price_per_hour_low=_number(row.get("price_per_hour_low")),
                price_per_hour_high=_number(row.get("price_per_hour_high")),
                vcpus_per_node=float(row.get("vcpus") or 0.0),
                network_gbps=_number(row.get("network_gbps")),
                effective_samples_per_dollar=_number(row.get("effective_samples_per_dollar")),
                interruptions_per_hour=_number(row.get("interruptions_per_hour"))
                if row["market"] == "spot"
                else None,
                flags=flags,
                stack_label=_text(row.get("stack_label")),
                remarks=row_remarks(row),
                **_plan_fields(row),
                **_bill_fields(row),
            )
        )
    return estimates


def row_remarks(row: Mapping[str, object]) -> tuple[str, ...]:
    """A fitting row's memory remark (its ``fit_reason``: how tight), its precision remark and its
    MFU remark (held to the best published)."""
    remarks = []
    if bool(row.get("fits", True)) and _text(row.get("fit_reason")):
        remarks.append(_text(row.get("fit_reason")))
    remarks += [_text(row.get(name)) for name in ("precision_remark", "mfu_remark") if _text(row.get(name))]
    if group := _text(row.get("band_group")):
        remarks.append(band_remark(group, _number(row.get("band_rows"))))
    return tuple(remarks)


def band_remark(group: str, rows: float | None) -> str:
    """Where a language model's training band comes from: ``80% band from 295 held-out runs: …``."""
    if group == UNVALIDATED:
        return (
            "80% band unvalidated: no held-out training run like this one was checked (widest band, doubled)"
        )
    return f"80% band from {rows or 0:.0f} held-out runs: {group}"


class _PlanFields(TypedDict, total=False):
    plan: str
    plan_text: str
    mfu: float | None
    memory_per_gpu_gib: float | None
    band_group: str
    band_rows: int | None


class _BillFields(TypedDict, total=False):
    fixed_hours: float | None
    fixed_usd: float | None
    egress_usd: float | None
    transfer_hours: float | None
    storage_usd: float | None
    energy_kwh: float | None
    carbon_kg: float | None
    grid_gco2e_per_kwh: float | None
    grid_carbon_year: int | None


def _plan_fields(row: dict[str, object]) -> _PlanFields:
    """A language model's plan columns (absent from other workloads' tables)."""
    plan = row.get("plan")
    if plan is None or not hasattr(plan, "token"):
        return {}
    return {
        "plan": plan.token(),
        "plan_text": _text(row.get("plan_text")),
        "mfu": _number(row.get("mfu")),
        "memory_per_gpu_gib": _number(row.get("memory_per_gpu_gib")),
        "band_group": _text(row.get("band_group")),
        "band_rows": int(rows) if (rows := _number(row.get("band_rows"))) is not None else None,
    }


def _bill_fields(row: dict[str, object]) -> _BillFields:
    """The bill's other lines (absent where the table was priced without them)."""
    fixed: _BillFields = {}
    if "fixed_hours" in row:
        fixed["fixed_hours"] = _number(row.get("fixed_hours"))
    if "fixed_usd" in row:
        fixed["fixed_usd"] = _number(row.get("fixed_usd"))
    if "egress_usd" not in row:
        return fixed
    year = _number(row.get("grid_carbon_year"))
    return {
        **fixed,
        "egress_usd": _number(row.get("egress_usd")),
        "transfer_hours": _number(row.get("transfer_hours")),
        "storage_usd": _number(row.get("storage_usd")),
        "energy_kwh": _number(row.get("energy_kwh")),
        "carbon_kg": _number(row.get("carbon_kg")),
        "grid_gco2e_per_kwh": _number(row.get("grid_gco2e_per_kwh")),
        "grid_carbon_year": int(year) if year else None,
    }


def deployment_estimate(
    row: Mapping[str, Any],
    *,
    instances: int,
    rate: float,
    price_per_hour: float,
    fits: bool,
    figures: ServingFigures,
    plan: str = "",
    plan_text: str = "",
) -> Estimate:
    """A priced serving deployment as an :class:`Estimate`, for networks and language models alike.

    ``rate`` is what the deployment serves per second in the question's unit (requests, tokens);
    ``price_per_hour`` is that of all its instances, deployable or not.
    """
    paid = bool(row["feasible"]) and price_per_hour > 0
    return Estimate(
        cloud=str(row["cloud"]),
        instance_type=str(row["instance_type"]),
        region=str(row["region"]),
        market=str(row["market"]),
        nodes=instances,
        accelerator=row.get("accelerator_key") or None,
        accelerators_per_node=float(row.get("accelerator_count") or 0.0),
        samples_per_second=rate,
        samples_per_second_low=rate,
        samples_per_second_high=rate,
        basis=row["basis"],
        bottleneck=str(row["bottleneck"]),
        price_per_hour=price_per_hour,
        samples_per_dollar=rate * SECONDS_PER_HOUR / price_per_hour if paid else 0.0,
        time_to_target_hours=None,
        cost_to_target_usd=None,
        expected_time_hours=None,
        expected_cost_usd=None,
        p_meet_deadline=None,
        fits=fits,
        excluded_reason=str(row["excluded_reason"]),
        interruption_bucket=row.get("interruption_bucket") or None,
        captured_at=str(row.get("captured_at") or ""),
        vcpus_per_node=float(row.get("vcpus") or 0.0),
        network_gbps=_finite_or_none(row.get("network_gbps")),
        serving=figures,
        plan=plan,
        plan_text=plan_text,
    )


def _finite_or_none(value: object) -> float | None:
    if not isinstance(value, SupportsFloat | str):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
