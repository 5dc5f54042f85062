"""Serving a decoder LLM: prefill, decode, KV cache, continuous batching, and the deployments it allows."""

from perdollar.predict.llm_serving.formats import FORMATS, ServingFormat, serving_format, unsupported_reason
from perdollar.predict.llm_serving.frame import ReplicaRate, llm_serving_frame, replica_rate
from perdollar.predict.llm_serving.load import LLMServingPrediction, RequestShape, predict_llm_serving
from perdollar.predict.llm_serving.load_points import LoadPoint, at_rate
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GroupShape,
    ServingEfficiency,
    decode_step_time,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    max_concurrent_sequences,
    prefill_time,
)

__all__ = [
    "DEFAULT_EFFICIENCY",
    "FORMATS",
    "GroupShape",
    "LLMServingPrediction",
    "LoadPoint",
    "ReplicaRate",
    "RequestShape",
    "ServingEfficiency",
    "ServingFormat",
    "at_rate",
    "decode_step_time",
    "kv_bytes_per_token",
    "kv_bytes_per_token_per_gpu",
    "llm_serving_frame",
    "max_concurrent_sequences",
    "predict_llm_serving",
    "prefill_time",
    "replica_rate",
    "serving_format",
    "unsupported_reason",
]
