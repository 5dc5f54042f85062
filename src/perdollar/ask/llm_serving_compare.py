"""``compare --inference`` of a language model: each configuration's deployment, under each engine
asked for, side by side.

Every (configuration, engine) pair is the serving question ``recommend --inference`` answers, asked
of that configuration's machine alone: the rate decides the replicas and instances, stored
``serve-bench`` runs calibrate the engine they measured, and prices flagged implausible rank last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd

from perdollar.ask.inputs import Progress, quiet
from perdollar.catalog import Catalog
from perdollar.catalog import load as load_catalog
from perdollar.configuration import Configuration
from perdollar.errors import PerdollarError
from perdollar.measure.result import Measurement
from perdollar.predict.llm_serving.engines import ANY_ENGINE, DEFAULT_ENGINE, ENGINES, serving_engine
from perdollar.predict.llm_serving.formats import FORMATS as SERVING_FORMATS
from perdollar.price.network_serving import plausibly_priced
from perdollar.question import LanguageModelSettings, Question
from perdollar.select.compare import configuration_for_comparison
from perdollar.select.llm_serving import llm_deployment_label

# What each compared row shows of its deployment, as the serving frame names it.
SHOWN_COLUMNS = (
    "instances", "replicas", "tensor_parallel", "precision", "usd_per_million_output_tokens",
    "usd_per_million_tokens", "ttft_p99_ms", "tpot_p99_ms", "basis", "feasible", "excluded_reason",
    "deployment_price_per_hour",
)  # fmt: skip


@dataclass(frozen=True)
class ServingComparison:
    """One row per configuration and engine, in the order given, with its ratio to the cheapest."""

    rows: tuple[dict[str, object], ...]
    engines: tuple[str, ...]
    slo_label: str
    notes: tuple[str, ...]
    catalog_captured_at: str

    @property
    def summary(self) -> str:
        priced = [r for r in self.rows if r["feasible"] and r["plausible_price"]]
        if not priced:
            return "No configuration serves the rate within the objectives under the engines asked for."
        best = min(priced, key=lambda r: float(str(r["usd_per_million_output_tokens"])))
        return (
            f"Cheapest: {best['configuration']} under {best['engine']} "
            f"(${float(str(best['usd_per_million_output_tokens'])):.3g} per million output tokens)."
        )


def compared_engines(text: str | None) -> tuple[str, ...]:
    """The engines a comparison shows: the default for none, every engine for ``any``, else each
    engine of a comma-separated list, in the order written."""
    if text is None or not text.strip():
        return (DEFAULT_ENGINE,)
    names = [part.strip() for part in text.split(",") if part.strip()]
    if any(name.lower() == ANY_ENGINE for name in names):
        if len(names) > 1:
            raise PerdollarError(
                f"--engine {text!r} mixes {ANY_ENGINE} with named engines", f"give {ANY_ENGINE} or a list"
            )
        return tuple(ENGINES)
    engines = tuple(dict.fromkeys(serving_engine(name).name for name in names))
    if not engines:
        raise PerdollarError(f"--engine {text!r} names no engine", f"use one of {', '.join(ENGINES)}")
    return engines


def compare_language_model_serving(
    question: Question,
    configurations: Sequence[str],
    *,
    catalog: Catalog | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    progress: Progress = quiet,
) -> ServingComparison:
    """Each configuration served under each engine the question's ``--engine`` names."""
    from perdollar.ask.answer import ask_language_model_serving

    if len(configurations) < 2:
        raise PerdollarError(
            "compare needs at least two configurations",
            'e.g. perdollar compare llama-3.1-8b --inference --rps 5 "1x g6e.xlarge" "1x p5.48xlarge"',
        )
    catalog = catalog if catalog is not None else load_catalog()
    settings = question.language_model or LanguageModelSettings()
    engines = compared_engines(settings.engine)
    texts, specs = zip(*(configuration_for_comparison(t, plans=True) for t in configurations), strict=True)
    only = _machines_of(catalog, specs)
    found: list[dict[str, object]] = []
    notes: tuple[str, ...] = ()
    label = ""
    for engine in engines:
        progress(f"sizing the deployments under {engine}")
        asked = replace(question, market="any", language_model=replace(settings, engine=engine))
        answer = ask_language_model_serving(
            asked, catalog=only, measurements=measurements, store_url=store_url, use_store=use_store
        )
        label = answer.slo_label
        notes = (*notes, *(n for n in answer.recommendation.notes if n not in notes))
        for text, spec in zip(texts, specs, strict=True):
            shown = _deployment_of(answer.frame, spec, text)
            found.append({"configuration": text, "engine": engine, **shown})
    rows = _with_ratios(found)

    def given_order(row: dict[str, object]) -> tuple[int, int]:
        return texts.index(str(row["configuration"])), engines.index(str(row["engine"]))

    return ServingComparison(
        tuple(sorted(rows, key=given_order)), engines, label, notes, str(catalog.captured_at)
    )


def _machines_of(catalog: Catalog, specs: Sequence[Configuration]) -> Catalog:
    """The catalog cut to the configurations' machines: no other machine can be a candidate."""
    instances = {}
    for spec in specs:
        instance = catalog.instance(spec.instance_type, spec.cloud)
        instances[(instance.cloud, instance.name)] = instance
    offers = tuple(o for o in catalog.offers if (o.cloud, o.instance_type) in instances)
    return replace(catalog, instance_types=instances, offers=offers)


def _plan_filter(frame: pd.DataFrame, plan: str, text: str) -> pd.Series:
    """Rows under the plan a label names: ``tp2``, a format (``fp8``), or both (``tp2+fp8``)."""
    keep = pd.Series(True, index=frame.index)
    for token in (t.strip().lower() for t in plan.split("+") if t.strip()):
        if token.startswith("tp") and token[2:].isdigit():
            keep &= pd.to_numeric(frame["tensor_parallel"], errors="coerce") == int(token[2:])
        elif token in SERVING_FORMATS:
            keep &= frame["precision"].astype(str).str.lower() == token
        else:
            raise PerdollarError(
                f"{text!r}: a serving plan is tpN and/or a format, not {token!r}", "e.g. with tp2+fp8"
            )
    return keep


def _deployment_of(frame: pd.DataFrame, spec: Configuration, text: str) -> dict[str, object]:
    """The configuration's best deployment in the ranked frame (cheapest plausible feasible first)."""
    rows = frame[frame["market"] == spec.market]
    rows = rows[rows["instance_type"].astype(str).str.lower() == spec.instance_type.lower()]
    if spec.region:
        rows = rows[rows["region"] == spec.region]
    if spec.plan:
        rows = rows[_plan_filter(rows, spec.plan, text)]
    if rows.empty:
        where = f" in {spec.region}" if spec.region else ""
        raise PerdollarError(
            f"{text!r}: the catalog has no {spec.market} offer of {spec.instance_type}{where}",
            "try the other market, another region, or another instance",
        )
    top = rows.iloc[0]
    shown = {name: _plain(top.get(name)) for name in SHOWN_COLUMNS}
    shown["feasible"] = bool(top["feasible"])
    shown["plausible_price"] = bool(plausibly_priced(rows.head(1)).iloc[0])
    shown["deployment"] = llm_deployment_label(top) if shown["feasible"] else ""
    shown["region"] = str(top["region"])
    flags = top.get("flags")
    shown["flags"] = [str(flag) for flag in flags] if isinstance(flags, tuple | list) else []
    return shown


def _plain(value: object) -> object:
    """A table value as JSON takes it: numbers as floats (NaN as None), the rest as text."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return None if isinstance(value, float) and math.isnan(value) else value
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None if pd.isna(value) else str(value)
    return None if math.isnan(number) else number


def _with_ratios(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """Each row's cost per output token against the cheapest feasible, plausibly priced row."""
    costs = [
        float(str(r["usd_per_million_output_tokens"]))
        for r in rows
        if r["feasible"] and r["plausible_price"] and r["usd_per_million_output_tokens"] is not None
    ]
    cheapest = min(costs) if costs else math.nan
    out = []
    for row in rows:
        cost = row["usd_per_million_output_tokens"]
        ratio = float(str(cost)) / cheapest if row["feasible"] and cost is not None and cheapest > 0 else None
        out.append({**row, "times_cheapest": ratio})
    return out
