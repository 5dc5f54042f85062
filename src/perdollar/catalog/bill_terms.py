"""Every dated figure of the bill beyond the captured prices, as rows: committed-use discounts,
managed-service surcharges and capacity constraints, each with its source, date and age."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from perdollar.catalog.committed import bundled_terms
from perdollar.catalog.managed import bundled_rates
from perdollar.catalog.price_age import is_stale, price_age_days
from perdollar.catalog.purchase import capacity_constraints


@dataclass(frozen=True, slots=True)
class DatedFigure:
    kind: str  # committed | managed | capacity
    cloud: str
    applies_to: str
    figure: str
    confidence: str
    source: str
    as_of: dt.date
    age_days: int | None
    stale: bool


def dated_figures(on: dt.date) -> tuple[DatedFigure, ...]:
    """The bundled tables' rows, with each row's age on ``on`` and whether it is stale."""
    rows: list[tuple[str, str, str, str, str, str, dt.date]] = []
    for t in bundled_terms():
        figure = f"{t.term_years}-year {t.payment}: −{t.discount_vs_on_demand:.0%} vs on-demand"
        rows.append(("committed", t.cloud, t.instance_pattern, figure, t.confidence, t.source, t.as_of))
    for r in bundled_rates():
        figure = f"{r.service} {r.use}: VM × {1 + r.surcharge_vs_vm:.3g} ({r.reference})"
        rows.append(("managed", r.cloud, r.instance_pattern, figure, r.confidence, r.source, r.as_of))
    for c in capacity_constraints():
        figure = f"{c.flag}: {c.meaning}"
        rows.append(("capacity", c.cloud, c.instance_pattern, figure, "", c.source, c.as_of))
    return tuple(
        DatedFigure(
            kind,
            cloud,
            pattern,
            figure,
            confidence,
            source,
            as_of,
            price_age_days(str(as_of), on),
            is_stale(str(as_of), on),
        )
        for kind, cloud, pattern, figure, confidence, source, as_of in rows
    )
