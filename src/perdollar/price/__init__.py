"""price stage: cost, spot expectations and P(deadline) for every candidate, and serving deployments.

:func:`price_table` prices a prediction frame against the catalog's offers;
:func:`price_deployments` prices serving plans.
"""

from perdollar.price.frame import (
    PRICED_COLUMNS,
    SpotAssumptions,
    Target,
    assumptions_for,
    describe_assumptions,
    price_frame,
    target_of,
)
from perdollar.price.model import Estimate
from perdollar.price.network_serving import price_deployments
from perdollar.price.table import price_table

__all__ = [
    "PRICED_COLUMNS",
    "Estimate",
    "SpotAssumptions",
    "Target",
    "assumptions_for",
    "describe_assumptions",
    "price_deployments",
    "price_frame",
    "price_table",
    "target_of",
]
