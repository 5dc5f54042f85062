"""Priced language-model deployments: replicas packed onto offers, spot spares, $ per million tokens."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from perdollar.price.serving import spot_extra_instances
from perdollar.vocabulary import SECONDS_PER_HOUR


def price_llm_deployments(
    deployments: pd.DataFrame,
    offers: pd.DataFrame,
    *,
    output_tokens_per_second: float,
    input_tokens_per_second: float,
    spot_overprovision: float | None = None,
) -> pd.DataFrame:
    """One row per (offer × tensor-parallel degree × format), cheapest per output token first.

    ``deployments`` is :func:`perdollar.predict.llm_serving.frame.llm_serving_frame`; ``offers``
    the allowed, priced rows of :meth:`Catalog.offers_frame`. The whole bill is divided by the
    output tokens served (what users pay for) and, separately, by all tokens processed.
    """
    offer_columns = ["cloud", "instance_type", "region", "market", "price_per_hour", "interruption_bucket"]
    offer_columns += [c for c in ("captured_at", "flags", "vcpus", "network_gbps") if c in offers.columns]
    frame = deployments.merge(offers[offer_columns], on=["cloud", "instance_type"], how="inner")
    instances = frame["instances"].to_numpy(dtype=float)
    is_spot = (frame["market"] == "spot").to_numpy()
    extra = spot_extra_instances(instances, frame["interruption_bucket"].tolist(), spot_overprovision)
    frame["spot_extra_instances"] = np.where(is_spot & (instances > 0), extra, 0)
    frame["instances"] = (instances + frame["spot_extra_instances"].to_numpy()).astype(int)
    price = frame["price_per_hour"].to_numpy(dtype=float)
    feasible = frame["feasible"].to_numpy(dtype=bool)
    bill = np.where(feasible, frame["instances"].to_numpy(dtype=float) * price, math.nan)
    frame["deployment_price_per_hour"] = bill
    output_per_hour = output_tokens_per_second * SECONDS_PER_HOUR
    all_per_hour = (output_tokens_per_second + input_tokens_per_second) * SECONDS_PER_HOUR
    frame["usd_per_million_output_tokens"] = bill / output_per_hour * 1e6
    frame["usd_per_million_tokens"] = bill / all_per_hour * 1e6
    frame = frame.sort_values(
        ["feasible", "usd_per_million_output_tokens", "ttft_p99_ms"],
        ascending=[False, True, True],
        na_position="last",
        kind="stable",
    )
    return frame.reset_index(drop=True)
