"""Terminal rendering of recommendations and comparisons (rich tables, units on every number)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape

from perdollar.fmt import format_band, format_hours, format_money, format_number, format_si
from perdollar.goals import trained
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation
from perdollar.terminal_tables import Column, FittedTable, fitted_table, print_fitted

BASIS_MARK = {"measured": "measured", "calibrated": "calibrated", "spec": "spec"}


SHAPE_HEADER = "accelerators\n(nodes × each)"


def shape(estimate: Estimate) -> str:
    """``8× A10G`` over ``(2 × 4)``: the chips of the whole candidate, GPUs and TPU chips counted
    alike, then the nodes (or slices) that carry them, and a non-GPU chip's training stack."""
    per_node = estimate.accelerators_per_node
    chip = estimate.accelerator or "CPU"
    if not per_node:
        return f"{chip}\n({estimate.nodes} node{'s' if estimate.nodes > 1 else ''})"
    stack = f" {estimate.stack_label}" if estimate.stack_label else ""
    return f"{estimate.nodes * per_node:g}× {chip}\n({estimate.nodes} × {per_node:g}){stack}"


def _rate_with_basis(estimate: Estimate) -> str:
    band = format_band(
        estimate.samples_per_second, estimate.samples_per_second_low, estimate.samples_per_second_high
    )
    return f"{band} {BASIS_MARK.get(estimate.basis, estimate.basis)}"


def _p(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def configuration(estimate: Estimate) -> str:
    """The label on two lines, ``2x p5.48xlarge spot`` over ``(aws eu-north-1)``, which every
    command reads back as it is; ⚠ when the catalog flags the offer."""
    warning = " ⚠" if estimate.flags else ""
    return estimate.label.replace(" (", f"{warning}\n(", 1)


def _to_target(estimate: Estimate) -> str:
    """Expected time and cost to the target; spot figures include interruptions (``E``)."""
    prefix = "E " if estimate.market == "spot" else ""
    return (
        f"{prefix}{format_hours(estimate.expected_time_hours)}\n"
        f"{prefix}{format_money(estimate.expected_cost_usd)}"
    )


def _compact(value: float) -> str:
    return format_si(value) if abs(value) >= 1e4 else format_number(value)


def compact_band(estimate: Estimate) -> str:
    """``33.0k`` over ``(19.8k–54.4k)``: the throughput and its band in a narrow column."""
    low, high = estimate.samples_per_second_low, estimate.samples_per_second_high
    return f"{_compact(estimate.samples_per_second)}\n({_compact(low)}–{_compact(high)})"


def recommendation_table(
    recommendation: Recommendation, *, top: int, unit: str = "samples", width: int | None = None
) -> FittedTable:
    """The ranked feasible candidates: rank (≈ tie, * Pareto), shape, throughput, price, target.

    Narrow terminals lose "bound by" first, then the shape, then the price: never the configuration.
    """
    question = recommendation.question
    goal = trained(question.goal)
    target, deadline_hours = (goal.target_samples, goal.deadline_hours) if goal else (None, None)
    has_target = target is not None
    title = f"Best {top} by {question.goal.objective}"
    if target is not None:
        title += f" — target {format_number(target)} {unit}"
    rank = Column("#", "right")
    label = Column("configuration")
    nodes = Column(SHAPE_HEADER, drop_order=4)
    rate = Column(f"{unit}/s\n(band) basis", "right", drop_order=2)
    bound = Column("bound by", drop_order=5)
    price = Column("$/h\n(all)", "right", drop_order=3)
    per_dollar = Column(f"{unit}/$", "right")
    to_target = Column("time\ncost", "right")
    deadline = Column(f"P(≤{format_hours(deadline_hours)})", "right", drop_order=1)
    ties = set(recommendation.ties)
    pareto = set(recommendation.pareto)
    feasible = [e for e in recommendation.estimates if e.feasible]
    from perdollar.catalog.price_age import price_date_note

    for index, estimate in enumerate(feasible[:top]):
        dated = price_date_note(
            estimate.captured_at, recommendation.catalog_captured_at, recommendation.created_at
        )
        rank.cells.append(f"{index + 1}" + ("≈" if index in ties else "") + ("*" if index in pareto else ""))
        label.cells.append(configuration(estimate))
        nodes.cells.append(shape(estimate))
        rate.cells.append(f"{compact_band(estimate)} {BASIS_MARK.get(estimate.basis, estimate.basis)}")
        bound.cells.append(estimate.bottleneck)
        price.cells.append(format_money(estimate.price_per_hour) + (f"\n{dated}" if dated else ""))
        per_dollar.cells.append(
            format_number(estimate.effective_samples_per_dollar or estimate.samples_per_dollar)
        )
        to_target.cells.append(_to_target(estimate))
        deadline.cells.append(_p(estimate.p_meet_deadline))
    columns = [rank, label, nodes, rate, bound, price, per_dollar]
    columns += [to_target] if has_target else []
    columns += [deadline] if deadline_hours else []
    columns += bill_columns(feasible[:top], moved=bool(question.data.data_region), has_target=has_target)
    return fitted_table(title, columns, width)


def _or_dash(value: float | None, text: str) -> str:
    return "—" if value is None else text


def bill_columns(estimates: Sequence[Estimate], *, moved: bool, has_target: bool) -> list[Column]:
    """The bill's other lines: egress $ over transfer h and storage $ where data moves; kWh over kg
    CO₂e where a target gives the run a length."""
    columns: list[Column] = []
    if moved:
        data = Column("egress $\ntransfer h", "right", drop_order=1)
        storage = Column("storage $", "right", drop_order=6)
        for e in estimates:
            data.cells.append(
                _or_dash(e.egress_usd, format_money(e.egress_usd or 0.0))
                + "\n"
                + _or_dash(e.transfer_hours, format_hours(e.transfer_hours or 0.0))
            )
            storage.cells.append(_or_dash(e.storage_usd, format_money(e.storage_usd or 0.0)))
        columns += [data, storage]
    if has_target and any(e.energy_kwh is not None for e in estimates):
        energy = Column("kWh\nkg CO2e", "right", drop_order=7)
        for e in estimates:
            energy.cells.append(
                _or_dash(e.energy_kwh, format_number(e.energy_kwh or 0.0))
                + "\n"
                + _or_dash(e.carbon_kg, format_number(e.carbon_kg or 0.0))
            )
        columns.append(energy)
    return columns


@dataclass(frozen=True)
class BillFigures:
    """Where a row's energy and carbon figures came from, to say why one is missing."""

    accelerator: str | None
    cloud: str
    region: str
    energy_known: bool
    carbon_known: bool


def missing_energy_note(rows: Iterable[BillFigures]) -> str:
    """Why a kWh or CO2e cell shows "—" (a figure the bill data lacks), or '' when none does."""
    from perdollar.catalog.bill_data import energy_factors

    rows = list(rows)
    pue = energy_factors().pue
    unpowered = {r.accelerator for r in rows if not r.energy_known and r.accelerator and r.cloud in pue}
    no_pue = {r.cloud for r in rows if not r.energy_known and r.cloud not in pue}
    no_grid = {f"{r.cloud} {r.region}" for r in rows if r.energy_known and not r.carbon_known}
    reasons = []
    if unpowered:
        reasons.append(f"the accelerator specs give no power figure (TDP) for {', '.join(sorted(unpowered))}")
    if no_pue:
        reasons.append(f"no data-centre PUE is known for {', '.join(sorted(no_pue))}")
    if no_grid:
        reasons.append(f"no grid carbon intensity is known for {', '.join(sorted(no_grid))}")
    return f"— under kWh/CO2e: {'; '.join(reasons)}." if reasons else ""


def training_bill_figures(estimates: Iterable[Estimate]) -> list[BillFigures]:
    return [
        BillFigures(e.accelerator, e.cloud, e.region, e.energy_kwh is not None, e.carbon_kg is not None)
        for e in estimates
    ]


def excluded_table(recommendation: Recommendation, *, limit: int, width: int | None = None) -> FittedTable:
    label = Column("configuration")
    nodes = Column(SHAPE_HEADER, drop_order=1)
    why = Column("why not", wraps=True)  # a reason wraps over lines rather than being cut
    excluded = [e for e in recommendation.estimates if not e.feasible]
    for estimate in excluded[:limit]:
        label.cells.append(configuration(estimate))
        nodes.cells.append(shape(estimate))
        why.cells.append(estimate.excluded_reason)
    title = "Excluded (near-misses first)"
    if len(excluded) > limit:
        title += f": the first {limit} of {len(excluded)} (--json lists them all)"
    return fitted_table(title, [label, nodes, why], width)


def print_recommendation(
    console: Console, recommendation: Recommendation, *, top: int, show_excluded: bool, unit: str = "samples"
) -> None:
    """Table, legend, explanation, notes and the catalog date."""
    from perdollar.catalog.price_age import stale_after_days

    ranked = recommendation_table(recommendation, top=top, unit=unit, width=console.width)
    print_fitted(console, ranked)
    if any(str(column.header).startswith("kWh") for column in ranked.table.columns):
        shown = [e for e in recommendation.estimates if e.feasible][:top]
        missing = missing_energy_note(training_bill_figures(shown))
        if missing:
            console.print(f"[dim]{missing}[/]", highlight=False)
    console.print(
        f"[dim]{unit}/$ and E (expected) time/cost include spot losses (checkpoints, lost work, "
        f"restarts); ≈ ties with #1 within the prediction bands; * on the time/cost Pareto front; "
        f"basis: measured > calibrated > spec; ⚠ catalog data-quality flag; a price dated apart from "
        f"the catalog shows its date, 'stale' past {stale_after_days()} days.[/]",
        highlight=False,
    )
    flagged = flags_note(e.flags for e in recommendation.estimates[:top] if e.feasible)
    if flagged:
        console.print(f"[dim]{flagged}[/]", highlight=False)
    for line in remarks_lines([e for e in recommendation.estimates if e.feasible][:top]):
        console.print(line, highlight=False, markup=False)
    if show_excluded:
        print_fitted(console, excluded_table(recommendation, limit=max(top, 20), width=console.width))
    console.print()
    console.print(recommendation.explanation, highlight=False)
    console.print()
    for note in recommendation.notes:
        console.print(f"[dim]{note}[/]", highlight=False)
    console.print(
        f"[dim]ranked on prices captured {recommendation.price_dates} "
        f"(snapshot {recommendation.catalog_snapshot_id}); prices change — "
        f"refresh with `perdollar catalog refresh`.[/]",
        highlight=False,
    )


def remarks_lines(shown: Sequence[Estimate]) -> list[str]:
    """``#3 1x g6e.xlarge spot (aws us-east-1): tight: 0.2 GiB over …``: what each ranked row
    assumed that the user should know (a tight memory fit, a precision fallback, a held MFU); a
    remark several rows share is said once, after their ranks (``#1, #2, #4: fp16 with …``)."""
    ranks: dict[str, list[int]] = {}
    for rank, estimate in enumerate(shown, 1):
        for remark in estimate.remarks:
            ranks.setdefault(remark, []).append(rank)
    lines = []
    for remark, where in ranks.items():
        head = (
            f"#{where[0]} {shown[where[0] - 1].label}"
            if len(where) == 1
            else ", ".join(f"#{r}" for r in where)
        )
        lines.append(f"{head}: {remark}")
    return lines


def flags_note(flag_sets: Iterable[Iterable[str]]) -> str:
    """The line that names the data-quality flags (⚠) of the prices shown ('' when none is flagged)."""
    flags = sorted({flag for flag_set in flag_sets for flag in flag_set})
    return f"⚠ flags shown: {', '.join(flags)} (`perdollar catalog flags` explains them)." if flags else ""


def comparison_table(
    estimates: Sequence[Estimate],
    *,
    unit: str = "samples",
    has_target: bool = False,
    deadline_hours: float | None = None,
    width: int | None = None,
) -> FittedTable:
    label = Column("configuration")
    nodes = Column(SHAPE_HEADER, drop_order=4)
    rate = Column(f"{unit}/s (band, basis)", "right", drop_order=2)
    bound = Column("bound by", drop_order=5)
    price = Column("$/h (all)", "right", drop_order=3)
    per_dollar = Column(f"{unit}/$ (after spot losses)", "right")
    time = Column(escape("E[time]"), "right")
    cost = Column(escape("E[cost]"), "right")
    deadline = Column(f"P(≤{format_hours(deadline_hours)})", "right", drop_order=1)
    for estimate in estimates:
        # The offer as priced, not as typed: its market and region (the cheapest, when none was
        # given), ⚠ where the catalog flags its price, and a language model's whole plan (the
        # user's "with fsdp" comes back with its micro-batch and accumulation).
        label.cells.append(configuration(estimate))
        nodes.cells.append(shape(estimate))
        rate.cells.append(_rate_with_basis(estimate))
        bound.cells.append(estimate.bottleneck)
        price.cells.append(format_money(estimate.price_per_hour))
        per_dollar.cells.append(
            format_number(estimate.effective_samples_per_dollar or estimate.samples_per_dollar)
        )
        time.cells.append(format_hours(estimate.expected_time_hours))
        cost.cells.append(format_money(estimate.expected_cost_usd))
        deadline.cells.append(_p(estimate.p_meet_deadline))
    columns = [label, nodes, rate, bound, price, per_dollar]
    columns += [time, cost] if has_target else []
    columns += [deadline] if deadline_hours else []
    return fitted_table(None, columns, width)
