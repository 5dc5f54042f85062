"""What each serving-engine feature is worth to one prediction: the same replica predicted with the
feature and without it, side by side (TTFT, TPOT, tokens/s, sequences that fit)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from perdollar.predict.llm_serving.disaggregate import disaggregation
from perdollar.predict.llm_serving.load import LLMServingPrediction, RequestShape
from perdollar.predict.llm_serving.timing import GroupShape

Predictor = Callable[[RequestShape, GroupShape], LLMServingPrediction]
# One feature's figures with it and without it: rates, latencies and counts, and what it is compared with.
FeatureWorth = dict[str, float | str]


def _change(without: LLMServingPrediction, with_: LLMServingPrediction, copies: int = 1) -> dict[str, float]:
    """``copies``: replicas of ``without`` that the GPUs of ``with_`` hold."""
    return {
        "output_tokens_per_second_without": without.output_tokens_per_second * copies,
        "output_tokens_per_second": with_.output_tokens_per_second,
        "ttft_ms_without": without.ttft_ms,
        "ttft_ms": with_.ttft_ms,
        "tpot_ms_without": without.tpot_ms,
        "tpot_ms": with_.tpot_ms,
        "max_concurrent_sequences_without": without.max_concurrent_sequences * copies,
        "max_concurrent_sequences": with_.max_concurrent_sequences,
    }


def feature_worth(
    predict: Predictor, work: RequestShape, shape: GroupShape, result: LLMServingPrediction
) -> dict[str, FeatureWorth]:
    """Per feature in use, the replica's figures with it and without it (``predict`` without
    disaggregation: a disaggregated ``result`` is compared with the same GPUs colocated)."""
    if not result.fits:
        return {}
    colocated = predict(work, shape)
    out: dict[str, FeatureWorth] = {}
    if work.prefix_share:
        without = predict(replace(work, prefix_share=0.0), shape)
        out["prefix_caching"] = {
            "prefix_share": work.prefix_share,
            "cached_tokens": work.cached_tokens,
            **_change(without, colocated),
        }
    if work.speculation is not None:
        spec = work.speculation
        without = predict(replace(work, speculation=None), shape)
        out["speculative_decoding"] = {
            "method": spec.method,
            "acceptance": spec.acceptance,
            "speculative_tokens": spec.tokens,
            "expected_tokens_per_step": spec.expected_tokens,
            "proposer_ms": colocated.breakdown_ms.get("proposer", 0.0),
            **_change(without, colocated),
        }
    if shape.expert_parallel > 1:
        # The same GPUs with attention and experts both tensor parallel over them.
        plain = GroupShape(shape.tensor_parallel * shape.attention_data_parallel, shape.pipeline_parallel)
        without = predict(work, plain)
        out["expert_parallel"] = {
            "expert_parallel": shape.expert_parallel,
            "attention_tensor_parallel": shape.tensor_parallel,
            "attention_data_parallel": shape.attention_data_parallel,
            "compared_with": f"tensor parallel {plain.tensor_parallel}",
            "fits_without": without.fits,
            **_change(without, colocated),
        }
    split = disaggregation(result.disaggregation or None)
    if split is not None:
        out["disaggregation"] = {
            "layout": result.disaggregation,
            "kv_transfer_ms": result.breakdown_ms.get("kv_transfer", 0.0),
            "prefill_pool_requests_per_second": result.breakdown_ms.get("prefill_pool_rps", 0.0),
            "decode_pool_requests_per_second": result.breakdown_ms.get("decode_pool_rps", 0.0),
            "compared_with": "the same replicas each prefilling and decoding",
            **_change(colocated, result, split.replicas),
        }
    return out
