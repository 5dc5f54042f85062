"""Words every stage shares, defined once: clouds, markets, kinds, bases, bottlenecks, objectives, units."""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

# The hyperscalers: any two of a region's machines share the cloud's network, so several may train
# together. A question's clouds are checked against the catalog it is asked of, not these lists.
CLOUDS = ("aws", "gcp", "azure")
# The GPU clouds of the bundled catalog (gpu_cloud_offers.csv); a refresh may bring others.
GPU_CLOUDS = ("coreweave", "hyperstack", "lambda", "nebius", "runpod", "vultr")
BUNDLED_CLOUDS_TEXT = ", ".join((*CLOUDS, *GPU_CLOUDS))

Market = Literal[
    "on-demand", "spot", "flex-start", "capacity-block", "reservation", "committed-1y", "committed-3y"
]
# The markets a catalog snapshot holds; committed terms are derived from on-demand prices.
MARKETS: tuple[Market, ...] = ("on-demand", "spot")
COMMITTED_MARKETS: tuple[Market, ...] = ("committed-1y", "committed-3y")
# Capacity bought ahead of the run at the cloud's own published prices (catalog/market_prices.csv):
# GCP Flex-start (Dynamic Workload Scheduler), AWS EC2 Capacity Blocks for ML, and machines sold
# only through reservations. Asked for by name: "any" does not wait for a queue or a booked date.
AHEAD_MARKETS: tuple[Market, ...] = ("flex-start", "capacity-block", "reservation")
# What --market may name: a market, "committed" (both terms) or "any" (on-demand and spot,
# committed terms too with a horizon).
MarketChoice = Literal[
    "on-demand",
    "spot",
    "flex-start",
    "capacity-block",
    "reservation",
    "committed-1y",
    "committed-3y",
    "committed",
    "any",
]
MARKET_CHOICES: tuple[MarketChoice, ...] = get_args(MarketChoice)
MARKET_CHOICES_TEXT = (
    "on-demand, spot, flex-start, capacity-block, reservation, committed-1y, committed-3y, "
    "committed (both terms) or any"
)
MARKET_WORDS = {
    "spot": "spot", "on-demand": "on-demand", "ondemand": "on-demand", "od": "on-demand",
    "committed-1y": "committed-1y", "committed-3y": "committed-3y",
}  # fmt: skip

Kind = Literal["train", "inference"]
# What a workload is, decided once per question: a network traced op by op, or a language model
# planned from its architecture and counted in tokens.
Family = Literal["network", "language-model"]

# Where a throughput comes from: a run on that hardware, a prediction anchored on a run of the same
# workload elsewhere, or hardware specs and fitted efficiencies alone.
Basis = Literal["measured", "calibrated", "spec"]
BASES: tuple[Basis, ...] = ("measured", "calibrated", "spec")

Bottleneck = Literal[
    "compute", "memory-bandwidth", "communication", "input-pipeline", "network-ingest", "overhead"
]

# The numeric formats a step runs in; the two FP8 recipes are predicted for language models only.
TrainingPrecision = Literal["fp32", "tf32", "amp-bf16", "amp-fp16", "bf16", "fp16", "fp8", "fp8-rowwise"]
# What a served language model may also be stored in (perdollar.predict.llm_serving.formats, with
# the names its checkpoints go by): --precision names both, and each path refuses what it cannot run.
ServingPrecision = Literal[
    "int8", "int4", "q4_k_m", "fp4", "mxfp4", "awq", "gptq", "w4a16", "w8a16", "nvfp4", "gguf-q4",
    "f16", "float16", "half", "bfloat16",
]  # fmt: skip
Precision = Literal[TrainingPrecision, ServingPrecision]
PRECISION_CHOICES: tuple[Precision, ...] = get_args(Precision)

# The serving engines perdollar predicts (each declared in perdollar.predict.llm_serving.engines):
# the GPU engines, then the non-GPU stacks' own; "any" asks for the best of them.
ServingEngineName = Literal[
    "vllm", "sglang", "tensorrt-llm", "tgi", "llama.cpp", "hf", "nxd-inference", "jetstream", "vllm-gaudi"
]
ANY_ENGINE = "any"

TrainingObjective = Literal["samples-per-dollar", "time", "cost", "weighted", "carbon"]
TRAINING_OBJECTIVES: tuple[TrainingObjective, ...] = get_args(TrainingObjective)
# A deployment is ranked by its cost per request (a network), per token (a language model) or, a
# language model's, by its carbon.
ServingObjective = Literal["usd-per-million-requests", "usd-per-million-tokens", "carbon"]
SERVING_OBJECTIVE: ServingObjective = "usd-per-million-requests"
# A language model is served by the token: its deployments are ranked by dollars per million tokens.
TOKEN_SERVING_OBJECTIVE: ServingObjective = "usd-per-million-tokens"
# What a serving latency objective bounds: a network's request latency, or a language model's time
# to its first token and time per output token after it.
LatencyMetric = Literal["latency", "ttft", "tpot"]
# How a fleet's traffic over a day is given: hourly rates, or the requests as they came.
TrafficKind = Literal["load-curve", "trace"]
# The markets a catalog listing filters by (the two a snapshot prices), and what it sorts by.
ListedMarket = Literal["on-demand", "spot"]
ListingSort = Literal[
    "price", "spot", "price-per-accelerator", "accelerator-memory", "vcpus", "memory", "accelerators",
    "network", "name",
]  # fmt: skip
# What bench measures: the step on one batch reused, the workload's own input path, the input
# pipeline alone, or the three of them.
BenchMode = Literal["cached-input", "full", "data-only", "all"]
# Where catalog refresh reads current prices: gpuhunt's published catalogs, or AWS's own APIs.
PriceSource = Literal["gpuhunt", "aws-api"]
# The rows the store keeps: a run's measurement, or a question's answer.
StoredKind = Literal["measurement", "recommendation"]

Word = TypeVar("Word", bound=str)


def checked_word(word: str, words: tuple[Word, ...]) -> Word:
    """``word`` as the one of ``words`` it equals, typed as they are (a ``Literal``'s values); a
    ValueError naming them where it is none."""
    for known in words:
        if word == known:
            return known
    raise ValueError(f"{word!r} is not one of {', '.join(words)}")


SECONDS_PER_HOUR = 3600.0
GIB = float(2**30)
