"""Every allowed offer × node count priced at once: the prediction for its shape next to its price.

:func:`price_table` joins a prediction frame (one row per instance type and node count, from
:mod:`perdollar.predict`) with the offers (one row per region and market) and adds the cost,
spot and deadline columns of :func:`perdollar.price.frame.price_frame`.
"""

from __future__ import annotations

import pandas as pd

from perdollar.frames import map_distinct, require_columns
from perdollar.predict.frame import PREDICTION_COLUMNS
from perdollar.price.fixed_costs import FixedCosts, add_fixed_costs, fixed_hours, priced_after
from perdollar.price.frame import PRICED_COLUMNS, SpotAssumptions, Target, price_frame


def _one_flag_text(flags: object) -> str:
    return ";".join(flags) if isinstance(flags, tuple | list) else ("" if flags is None else str(flags))


def _flag_text(flags: pd.Series) -> pd.Series:
    return pd.Series(map_distinct(flags, _one_flag_text), index=flags.index, dtype=object, name=flags.name)


def join_predictions(offers: pd.DataFrame, predictions: pd.DataFrame) -> pd.DataFrame:
    """One row per (offer, node count): the offer's price next to the prediction for its shape."""
    offer_columns = [
        c
        for c in (
            "cloud",
            "instance_type",
            "region",
            "market",
            "price_per_hour",
            "price_max_per_hour",
            "price_min_per_hour",
            "price_age_days",
            "interruption_bucket",
            "captured_at",
            "flags",
            "vcpus",
            "accelerator_name",
            "accelerator_count",
            "accelerator_memory_gib_total",
            "network_gbps",
        )
        if c in offers.columns
    ]
    left = offers[offer_columns].rename(
        columns={
            "price_per_hour": "price_per_node_hour",
            "price_max_per_hour": "price_max_per_node_hour",
            "price_min_per_hour": "price_min_per_node_hour",
        }
    )
    left = left.assign(flags=_flag_text(left["flags"]) if "flags" in left else "")
    # The offer's own facts win where both sides carry a column (e.g. vcpus, network_gbps).
    shared = [c for c in predictions.columns if c in left.columns and c not in ("cloud", "instance_type")]
    right = predictions.drop(columns=shared)
    joined = left.merge(right, on=["cloud", "instance_type"], how="inner", validate="many_to_many")
    return joined.reset_index(drop=True)


def price_table(
    offers: pd.DataFrame,
    predictions: pd.DataFrame,
    target: Target,
    assumptions: SpotAssumptions,
    fixed: FixedCosts | None = None,
) -> pd.DataFrame:
    """One priced row per (offer, node count); with ``fixed`` and a target, each job's fixed costs
    in its time and cost, as a ranking bills them."""
    require_columns(predictions, PREDICTION_COLUMNS, "the prediction frame")
    joined = join_predictions(offers, predictions)
    if fixed is None or not target.samples:
        priced = price_frame(joined, target, assumptions)
    else:
        hours = fixed_hours(joined, fixed)
        priced = add_fixed_costs(priced_after(joined, hours, target, assumptions), hours, target)
    return require_columns(priced, PRICED_COLUMNS, "the priced table")
