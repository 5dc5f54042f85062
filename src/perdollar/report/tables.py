"""Terminal rendering of recommendations and comparisons (rich tables, units on every number)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from perdollar.fmt import format_band, format_hours, format_money, format_number, format_si
from perdollar.price.model import Estimate
from perdollar.select.model import Recommendation

BASIS_MARK = {"measured": "measured", "calibrated": "calibrated", "spec": "spec"}


def shape(estimate: Estimate) -> str:
    """``2× 4×A10G``: nodes × accelerators per node × accelerator."""
    per_node = estimate.accelerators_per_node
    count = f"{per_node:g}×" if per_node else ""
    chip = estimate.accelerator or "CPU"
    return f"{estimate.nodes}× {count}{chip}"


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


def recommendation_table(recommendation: Recommendation, *, top: int, unit: str = "samples") -> Table:
    """The ranked feasible candidates: rank (≈ tie, * Pareto), shape, throughput, price, target."""
    question = recommendation.question
    has_target = question.target_samples is not None
    title = f"Best {top} by {question.objective}"
    if has_target:
        title += f" — target {format_number(question.target_samples)} {unit}"
    table = Table(title=title, header_style="bold", title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("configuration")
    table.add_column("nodes × accel")
    table.add_column(f"{unit}/s\n(band) basis", justify="right")
    table.add_column("bound by")
    table.add_column("$/h\n(all)", justify="right")
    table.add_column(f"{unit}/$", justify="right")
    if has_target:
        table.add_column("time\ncost", justify="right")
    if question.deadline_hours:
        table.add_column(f"P(≤{format_hours(question.deadline_hours)})", justify="right")
    ties = set(recommendation.ties)
    pareto = set(recommendation.pareto)
    feasible = [e for e in recommendation.estimates if e.feasible]
    from perdollar.catalog.price_age import price_date_note

    for index, estimate in enumerate(feasible[:top]):
        mark = f"{index + 1}" + ("≈" if index in ties else "") + ("*" if index in pareto else "")
        dated = price_date_note(
            estimate.captured_at, recommendation.catalog_captured_at, recommendation.created_at
        )
        rate = compact_band(estimate)
        per_dollar = estimate.effective_samples_per_dollar or estimate.samples_per_dollar
        row = [
            mark,
            configuration(estimate),
            shape(estimate),
            f"{rate} {BASIS_MARK.get(estimate.basis, estimate.basis)}",
            estimate.bottleneck,
            format_money(estimate.price_per_hour) + (f"\n{dated}" if dated else ""),
            format_number(per_dollar),
        ]
        if has_target:
            row.append(_to_target(estimate))
        if question.deadline_hours:
            row.append(_p(estimate.p_meet_deadline))
        table.add_row(*row)
    return table


def excluded_table(recommendation: Recommendation, *, limit: int) -> Table:
    table = Table(title="Excluded (near-misses first)", header_style="bold", title_justify="left")
    table.add_column("configuration")
    table.add_column("nodes × accel")
    table.add_column("why not")
    excluded = [e for e in recommendation.estimates if not e.feasible]
    for estimate in excluded[:limit]:
        table.add_row(configuration(estimate), shape(estimate), estimate.excluded_reason)
    return table


def print_recommendation(
    console: Console, recommendation: Recommendation, *, top: int, show_excluded: bool, unit: str = "samples"
) -> None:
    """Table, legend, explanation, notes and the catalog date."""
    from perdollar.catalog.price_age import stale_after_days

    console.print(recommendation_table(recommendation, top=top, unit=unit))
    console.print(
        f"[dim]{unit}/$ and E (expected) time/cost include spot losses (checkpoints, lost work, "
        f"restarts); ≈ ties with #1 within the prediction bands; * on the time/cost Pareto front; "
        f"basis: measured > calibrated > spec; ⚠ catalog data-quality flag; a price dated apart from "
        f"the catalog shows its date, 'stale' past {stale_after_days()} days.[/]",
        highlight=False,
    )
    flags = sorted({flag for e in recommendation.estimates[:top] if e.feasible for flag in e.flags})
    if flags:
        console.print(
            f"[dim]⚠ flags shown: {', '.join(flags)} (`perdollar catalog flags` explains them).[/]",
            highlight=False,
        )
    if show_excluded:
        console.print(excluded_table(recommendation, limit=max(top, 20)))
    console.print()
    console.print(recommendation.explanation, highlight=False)
    console.print()
    for note in recommendation.notes:
        console.print(f"[dim]{note}[/]", highlight=False)
    console.print(
        f"[dim]catalog captured {recommendation.catalog_captured_at} "
        f"(snapshot {recommendation.catalog_snapshot_id}); prices change — "
        f"refresh with `perdollar catalog refresh`.[/]",
        highlight=False,
    )


def comparison_table(
    estimates: Sequence[Estimate],
    labels: Sequence[str],
    *,
    unit: str = "samples",
    has_target: bool = False,
    deadline_hours: float | None = None,
) -> Table:
    table = Table(header_style="bold")
    table.add_column("configuration")
    table.add_column("nodes × accel")
    table.add_column(f"{unit}/s (band, basis)", justify="right")
    table.add_column("bound by")
    table.add_column("$/h (all)", justify="right")
    table.add_column(f"{unit}/$ (after spot losses)", justify="right")
    if has_target:
        table.add_column(escape("E[time]"), justify="right")
        table.add_column(escape("E[cost]"), justify="right")
    if deadline_hours:
        table.add_column(f"P(≤{format_hours(deadline_hours)})", justify="right")
    for label, estimate in zip(labels, estimates, strict=True):
        row = [
            label,
            shape(estimate),
            _rate_with_basis(estimate),
            estimate.bottleneck,
            format_money(estimate.price_per_hour),
            format_number(estimate.effective_samples_per_dollar or estimate.samples_per_dollar),
        ]
        if has_target:
            row += [format_hours(estimate.expected_time_hours), format_money(estimate.expected_cost_usd)]
        if deadline_hours:
            row.append(_p(estimate.p_meet_deadline))
        table.add_row(*row)
    return table
