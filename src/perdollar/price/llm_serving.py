"""Priced language-model deployments: replicas packed onto offers, spot spares, $ per million tokens."""

from __future__ import annotations

import pandas as pd

from perdollar.price.network_serving import billed, ranked


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
    offer_columns += [
        c for c in ("captured_at", "price_basis", "flags", "vcpus", "network_gbps") if c in offers.columns
    ]
    frame = deployments.merge(offers[offer_columns], on=["cloud", "instance_type"], how="inner")
    frame = billed(
        frame,
        instances=frame["instances"].to_numpy(dtype=float),
        feasible=frame["feasible"].to_numpy(dtype=bool),
        served_per_second={
            "output_tokens": output_tokens_per_second,
            "tokens": output_tokens_per_second + input_tokens_per_second,
        },
        spot_overprovision=spot_overprovision,
    )
    return ranked(frame, "usd_per_million_output_tokens", "ttft_p99_ms")
