"""Hard reasons and constraints: which priced candidates may be ranked, and why the others may not.

A candidate is an offer (instance type, region, market, price) run on ``nodes`` whole
instances. Candidates that cannot run, or break a constraint, are kept with a reason code so
that ``--show-excluded`` can say why; the reason text is written only for rows that are shown.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from perdollar.fmt import format_hours, format_money
from perdollar.frames import require_columns
from perdollar.goals import DEFAULT_CONFIDENCE
from perdollar.price.frame import PRICED_COLUMNS, Target

# Reason codes, in the order they are checked (the first one that applies is reported).
OK = ""
REASON_STACK = "stack"  # software stack / dtype: the prediction says it cannot run
REASON_FIT = "fit"  # does not fit in accelerator memory
REASON_NO_PRICE = "no-price"
REASON_NO_SPOT = "no-spot"  # the catalog's spot price equals on-demand: no real spot offer
REASON_NO_THROUGHPUT = "no-throughput"
REASON_DEADLINE = "deadline"
REASON_BUDGET = "budget"

NO_REAL_SPOT_FLAG = "spot-price-equals-on-demand"
# Chips whose software stack a PyTorch/CUDA workload cannot use unchanged, and what it would need.
FOREIGN_STACKS = {
    "neuron": "AWS Neuron (torch-neuronx)",
    "xla": "XLA (torch_xla on TPU)",
    "habana": "Habana SynapseAI (habana_frameworks.torch)",
    "qaic": "Qualcomm Cloud AI SDK",
}


def mark_constraints(
    priced: pd.DataFrame,
    target: Target,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    stacks: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Mark every priced candidate with the first hard reason or constraint it breaks.

    The ``reason`` column is empty for feasible candidates. ``stacks`` maps accelerator keys to
    their software stack (from the catalog).
    """
    frame = require_columns(
        priced, (*PRICED_COLUMNS, "fits", "flags", "accelerator_key"), "the priced table"
    ).copy()
    if "excluded_reason" not in frame:
        frame["excluded_reason"] = ""
    frame["excluded_reason"] = frame["excluded_reason"].fillna("").astype(str)
    if stacks:
        # The predictor may not flag every foreign stack: name it here so the row says why.
        stack = frame["accelerator_key"].map(dict(stacks)).fillna("")
        foreign = stack.isin(list(FOREIGN_STACKS)) & (frame["excluded_reason"] == "")
        if foreign.any():
            sentences = {
                name: f"needs the {label} software stack; PyTorch/CUDA code does not run there unchanged"
                for name, label in FOREIGN_STACKS.items()
            }
            frame.loc[foreign, "excluded_reason"] = stack[foreign].map(sentences)
    excluded_text = frame["excluded_reason"].to_numpy()
    fits = frame["fits"].fillna(False).to_numpy(dtype=bool)
    price = frame["price_per_node_hour"].to_numpy(dtype=np.float64)
    no_real_spot = (frame["market"].to_numpy() == "spot") & frame["flags"].str.contains(
        NO_REAL_SPOT_FLAG, regex=False
    ).to_numpy(dtype=bool)
    rate = frame["samples_per_second"].to_numpy(dtype=np.float64)
    p_deadline = frame["p_meet_deadline"].to_numpy(dtype=np.float64)
    expected_cost = frame["expected_cost_usd"].to_numpy(dtype=np.float64)

    late = np.zeros(len(frame), dtype=bool)
    if target.samples and target.deadline_hours:
        late = ~(p_deadline >= confidence)
    over_budget = np.zeros(len(frame), dtype=bool)
    if target.samples and target.budget_usd:
        over_budget = ~(expected_cost <= target.budget_usd)
    frame["reason"] = np.select(
        [excluded_text != "", ~fits, ~(price > 0), no_real_spot, ~(rate > 0), late, over_budget],
        [
            REASON_STACK,
            REASON_FIT,
            REASON_NO_PRICE,
            REASON_NO_SPOT,
            REASON_NO_THROUGHPUT,
            REASON_DEADLINE,
            REASON_BUDGET,
        ],
        default=OK,
    )
    return frame


def reason_text(row: pd.Series, target: Target, confidence: float) -> str:
    """The sentence for one excluded row (built only for rows that are shown)."""
    code = row["reason"]
    if code == REASON_STACK:
        return str(row.get("excluded_reason") or "software stack unsupported")
    if code == REASON_FIT:
        return str(row.get("fit_reason") or "does not fit in accelerator memory")
    if code == REASON_NO_PRICE:
        return "no price in the catalog for this offer"
    if code == REASON_NO_SPOT:
        return "catalog spot price equals on-demand: probably no real spot offer"
    if code == REASON_NO_THROUGHPUT:
        return "predicted throughput is zero"
    if code == REASON_DEADLINE:
        return (
            f"P(done by {format_hours(target.deadline_hours)}) = {row['p_meet_deadline']:.2f} "
            f"< {confidence:.2f} (expected {format_hours(row['expected_time_hours'])})"
        )
    if code == REASON_BUDGET:
        expected = format_money(row["expected_cost_usd"])
        return f"expected cost {expected} > budget {format_money(target.budget_usd)}"
    return ""
