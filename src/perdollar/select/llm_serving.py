"""Ranking a language model's priced deployments: the estimates kept and the explanation."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import SupportsFloat, TypedDict

import pandas as pd

from perdollar.configuration import Configuration
from perdollar.price.model import Estimate, ServingFigures
from perdollar.price.network_serving import plausibly_priced
from perdollar.select.estimates import deployment_estimate
from perdollar.select.llm_serving_ties import band_figures

MAX_FEASIBLE_ESTIMATES = 200
# One deployment shape: a region's best of each (machine, market, tensor-parallel degree, format).
DEPLOYMENT_SHAPE = ["cloud", "instance_type", "market", "tensor_parallel", "precision"]


class BillFigures(TypedDict):
    """A deployment's energy, carbon and weights-pull figures, as :class:`ServingFigures` takes them."""

    energy_kwh_per_million_tokens: float | None
    co2e_g_per_million_tokens: float | None
    energy_kwh_per_million_output_tokens: float | None
    co2e_g_per_million_output_tokens: float | None
    grid_gco2e_per_kwh: float | None
    weights_gb: float | None
    weights_egress_usd: float | None
    weights_load_s: float | None


def _number(value: object) -> float:
    """A number from the table; NaN where the cell holds none."""
    if not isinstance(value, SupportsFloat | str):
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _whole(value: object) -> int:
    """A count from the table; 0 where an excluded deployment has none."""
    number = _number(value)
    return int(number) if math.isfinite(number) else 0


def _layout(row: pd.Series | Mapping[str, object]) -> tuple[str, str]:
    """The replica's layout as a plan token and in words: tensor parallel, or experts split over
    its GPUs with attention data parallel (a mixture-of-experts model's expert_parallel column)."""
    gpus = int(_number(row["tensor_parallel"]))
    experts = _whole(row.get("expert_parallel", 1)) or 1
    if experts > 1:
        return f"ep{experts}", f"expert parallel {experts} (attention data parallel)"
    return f"tp{gpus}", f"tensor parallel {gpus}"


def llm_deployment_label(row: pd.Series | Mapping[str, object]) -> str:
    plan = f"{_layout(row)[0]}+{row['precision']}"
    return Configuration(
        int(_number(row["instances"])) or 1, str(row["instance_type"]), str(row["market"]), str(row["cloud"]),
        str(row["region"]), plan,
    ).label  # fmt: skip


def llm_deployment_estimates(
    frame: pd.DataFrame, requests_per_second: float, slo_label: str, *, by_carbon: bool = False
) -> tuple[Estimate, ...]:
    """The feasible deployments (best region per machine, degree and format, and every deployment
    the explanation names), in rank order, then one row per reason."""
    every_feasible = frame[frame["feasible"]]
    shapes = every_feasible.drop_duplicates(DEPLOYMENT_SHAPE).head(MAX_FEASIBLE_ESTIMATES)
    # A deployment the explanation names may be a shape's dearer region (the lowest-emission one
    # often is): kept too, so that a report drawn from the stored answer names the same one.
    named = explained_deployments(every_feasible, by_carbon=by_carbon)
    feasible = every_feasible[every_feasible.index.isin(shapes.index.union(pd.Index(named)))]
    excluded = frame[~frame["feasible"]].drop_duplicates(["accelerator_key", "excluded_reason"])
    estimates = []
    for row in pd.concat([feasible, excluded]).to_dict("records"):
        ok = bool(row["feasible"])
        instances = max(int(row["instances"]), 1)
        # Every estimate's price is that of all its instances, so that its price per instance
        # (history's price moves) is the catalog's, deployable or not.
        per_instance = _number(row["price_per_hour"])
        price = _number(row["deployment_price_per_hour"]) if ok else per_instance * instances
        tokens = _number(row["output_tokens_per_second"])
        figures = ServingFigures(
            requests_per_second=requests_per_second,
            slo=slo_label,
            replicas=_whole(row["replicas"]),
            replicas_per_instance=_whole(row["replicas_per_instance"]),
            spot_extra_instances=_whole(row["spot_extra_instances"]),
            batch=_number(row["batch"]),
            price_per_instance_per_hour=per_instance,
            utilisation=_number(row["utilisation"]),
            tensor_parallel=_whole(row["tensor_parallel"]),
            precision=str(row["precision"]),
            ttft_p99_ms=_number(row["ttft_p99_ms"]),
            tpot_p99_ms=_number(row["tpot_p99_ms"]),
            max_concurrent_sequences=_number(row["max_concurrent_sequences"]),
            kv_cache_gib=_number(row["kv_cache_gib"]),
            engine=str(row["engine"]) if row.get("engine") else None,
            kv_precision=str(row["kv_precision"]) if row.get("kv_precision") else None,
            usd_per_million_output_tokens=_number(row["usd_per_million_output_tokens"]),
            usd_per_million_tokens=_number(row["usd_per_million_tokens"]),
            price_basis=_text(row.get("price_basis")),
            **_bill_figures(row),
            **band_figures(row),
        )
        estimates.append(
            deployment_estimate(
                row,
                instances=instances,
                rate=tokens,
                price_per_hour=price,
                fits=not str(row["excluded_reason"]).startswith(("needs", "weights")),
                figures=figures,
                plan=f"{_layout(row)[0]}+{row['precision']}",
                plan_text=f"{_layout(row)[1]}, {row['precision']}" + _fit_note(row),
            )
        )
    return tuple(estimates)


def _text(value: object) -> str | None:
    """A text cell, None where the table has none (an empty or missing cell)."""
    return value if isinstance(value, str) and value else None


def _fit_note(row: pd.Series) -> str:
    """A non-GPU stack's word on how far the row rests on published figures ('' for GPUs)."""
    note = row.get("fit_note")
    return f" ({note})" if isinstance(note, str) and note else ""


def _bill_figures(row: Mapping[str, object]) -> BillFigures:
    """The energy, carbon and weights-pull figures of a row, None where they were not priced."""

    def priced(name: str) -> float | None:
        number = _number(row.get(name))
        return number if math.isfinite(number) else None

    return {
        "energy_kwh_per_million_tokens": priced("energy_kwh_per_million_tokens"),
        "co2e_g_per_million_tokens": priced("co2e_g_per_million_tokens"),
        "energy_kwh_per_million_output_tokens": priced("energy_kwh_per_million_output_tokens"),
        "co2e_g_per_million_output_tokens": priced("co2e_g_per_million_output_tokens"),
        "grid_gco2e_per_kwh": priced("grid_gco2e_per_kwh"),
        "weights_gb": priced("weights_gb"),
        "weights_egress_usd": priced("weights_egress_usd"),
        "weights_load_s": priced("weights_load_s"),
    }


def _other_end(feasible: pd.DataFrame, by_carbon: bool) -> Hashable | None:
    """The index of the other end of the cost-vs-carbon trade: the cheapest deployment when ranked
    by carbon, the lowest-emission one when ranked by cost (None when no row has both figures)."""
    column = "usd_per_million_output_tokens" if by_carbon else "co2e_g_per_million_output_tokens"
    both = ["usd_per_million_output_tokens", "co2e_g_per_million_output_tokens"]
    if not set(both) <= set(feasible.columns):
        return None
    known = feasible[feasible[both].apply(pd.to_numeric, errors="coerce").notna().all(axis=1)]
    return None if known.empty else pd.to_numeric(known[column]).idxmin()


def _comparable(feasible: pd.DataFrame) -> pd.DataFrame:
    """The rows a format or an engine is judged by: those priced plausibly, when any is."""
    plausible = plausibly_priced(feasible)
    return feasible[plausible] if plausible.any() else feasible


def explained_deployments(feasible: pd.DataFrame, *, by_carbon: bool = False) -> list[Hashable]:
    """The indices of the feasible rows the explanation names beyond the top: the other end of the
    cost-vs-carbon trade and the cheapest of each format and each engine."""
    named: list[Hashable] = []
    if feasible.empty:
        return named
    other = _other_end(feasible, by_carbon)
    if other is not None:
        named.append(other)
    priced = _comparable(feasible)
    cost = pd.to_numeric(priced["usd_per_million_output_tokens"], errors="coerce")
    for key in ("precision", "engine"):
        if key in priced.columns and cost.notna().any():
            named.extend(cost.groupby(priced[key]).idxmin().dropna().tolist())
    return named


def _carbon_trade(feasible: pd.DataFrame, top: pd.Series, by_carbon: bool) -> list[str]:
    """The other end of the cost-vs-carbon trade, with what it saves and what it costs."""
    index = _other_end(feasible, by_carbon)
    if index is None:
        return []
    other = feasible.loc[index]
    grams = "co2e_g_per_million_output_tokens"
    dollars = "usd_per_million_output_tokens"
    if other[dollars] == top[dollars] and other[grams] == top[grams]:
        return []
    carbon = _times(max(top[grams], other[grams]) / min(top[grams], other[grams]))
    price = _times(max(top[dollars], other[dollars]) / min(top[dollars], other[dollars]))
    label = llm_deployment_label(other)
    if by_carbon:
        trade = f"The cheapest: {label}: {price} cheaper for {carbon} the CO2e"
    else:
        trade = f"The lowest-emission deployment: {label}: {carbon} less CO2e for {price} the price"
    return [f"{trade} (${other[dollars]:.3g} and {other[grams]:.3g} g CO2e per million output tokens)."]


def _times(ratio: float) -> str:
    return f"{ratio:,.0f}×" if ratio >= 10 else f"{ratio:.2g}×"


def explain_llm_serving(frame: pd.DataFrame, rps: float, slo_label: str, *, by_carbon: bool = False) -> str:
    """Why the top deployment wins, the runner-up on another machine, and what kept others out."""
    feasible = frame[frame["feasible"]]
    if feasible.empty:
        return f"Nothing serves {rps:g} requests/s within {slo_label}."
    top = feasible.iloc[0]
    lead = "Lowest emissions" if by_carbon else "Cheapest"
    lines = [
        f"{lead}: {llm_deployment_label(top)}: {int(top['replicas'])} replica(s) of {_layout(top)[1]} "
        f"in {top['precision']}, TTFT p99 {top['ttft_p99_ms']:.0f} ms and "
        f"TPOT p99 {top['tpot_p99_ms']:.0f} ms at {rps:g} requests/s ({top['basis']}), "
        f"${top['usd_per_million_output_tokens']:.3g} per million output tokens "
        f"(${top['usd_per_million_tokens']:.3g} per million tokens in and out)."
    ]
    if math.isfinite(_number(top.get("co2e_g_per_million_output_tokens"))):
        lines.append(
            f"It draws {top['power_kw']:.3g} kW: {top['energy_kwh_per_million_output_tokens']:.3g} kWh and "
            f"{top['co2e_g_per_million_output_tokens']:.3g} g CO2e per million output tokens "
            f"({top['grid_gco2e_per_kwh']:.0f} g/kWh grid)."
        )
        lines.extend(_carbon_trade(feasible, top, by_carbon))
    others = feasible[feasible["accelerator_key"] != top["accelerator_key"]]
    if not others.empty:
        runner = others.iloc[0]
        ratio = runner["usd_per_million_output_tokens"] / top["usd_per_million_output_tokens"]
        lines.append(
            f"Runner-up on another chip: {llm_deployment_label(runner)}, {ratio:.2g}× the cost per token."
        )
    # What a format or an engine is worth is read from prices a user can get: a row whose price is
    # flagged implausible would make a format or an engine look cheaper than it is.
    priced = _comparable(feasible)
    best_format = priced.groupby("precision")["usd_per_million_output_tokens"].min().sort_values()
    if len(best_format) > 1:
        lines.append(
            "Best cost per million output tokens by format: "
            + ", ".join(f"{name} ${value:.3g}" for name, value in best_format.items())
            + "."
        )
    if "engine" in priced.columns:
        best_engine = priced.groupby("engine")["usd_per_million_output_tokens"].min().sort_values()
        if len(best_engine) > 1:
            cheapest = best_engine.iloc[0]
            lines.append(
                "What the engine is worth — best cost per million output tokens by engine: "
                + ", ".join(
                    f"{name} ${value:.3g}" + ("" if value == cheapest else f" ({value / cheapest:.2g}×)")
                    for name, value in best_engine.items()
                )
                + "."
            )
    return "\n".join(lines)
