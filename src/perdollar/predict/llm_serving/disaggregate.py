"""Disaggregated serving: prompts prefilled on one pool of replicas, tokens decoded on another.

``xPyD``: x prefill replicas and y decode replicas of the same shape. A prefill replica only
prefills, batching prompts into chunks; a decode replica only decodes, so its steps carry no
prompt tokens and its TPOT is a pure decode step. The pools serve the rate the slower of them
allows. A prompt's KV cache moves from the prefill replica to a decode replica before the first
token can follow it: each prefill GPU sends its shard of the cache to its peer, over the GPU
link inside a host or the network between hosts (an RDMA NIC a GPU, as on H100/H200 HGX hosts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.llm import collectives as cx
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.load import (
    LLMServingPrediction,
    RequestShape,
    first_token_time,
    predict_llm_serving,
    with_proposer,
)
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GroupShape,
    ServingEfficiency,
    decode_step_time,
    kv_bytes_per_token_per_gpu,
    prefill_time,
)
from perdollar.workload.llm.architecture import DecoderArchitecture

# Prompt tokens a prefill replica batches into one pass (SGLang's chunked_prefill_size and vLLM's
# max_num_batched_tokens on large GPUs).
PREFILL_CHUNK_TOKENS = 8192
# One 400 Gb/s RDMA NIC per GPU (ConnectX-7 on H100/H200 HGX hosts), at RDMA's achievable share.
NIC_GBPS_PER_GPU = 400.0
RDMA_EFFICIENCY = 0.8
# A bulk copy of many megabytes reaches most of a GPU link's one-way rate (far more than the small
# all-reduces of a decode step do); the same share as RDMA's, an assumption, not a fit.
GPU_LINK_COPY_EFFICIENCY = 0.8
_PATTERN = re.compile(r"^\s*(\d+)\s*p\s*(\d+)\s*d\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Disaggregation:
    prefill_replicas: int
    decode_replicas: int

    @property
    def replicas(self) -> int:
        return self.prefill_replicas + self.decode_replicas

    @property
    def label(self) -> str:
        return f"{self.prefill_replicas}P{self.decode_replicas}D"


def disaggregation(text: str | None) -> Disaggregation | None:
    """``xPyD`` read (None when not given)."""
    if text is None:
        return None
    found = _PATTERN.match(text)
    if not found or int(found.group(1)) < 1 or int(found.group(2)) < 1:
        raise PerdollarError(
            f"cannot read the disaggregation {text!r}",
            "give prefill and decode replicas as xPyD, e.g. --disaggregate 1P3D",
        )
    return Disaggregation(int(found.group(1)), int(found.group(2)))


def kv_transfer_s(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    work: RequestShape,
    *,
    across_hosts: bool,
) -> float:
    """One prompt's KV cache, prefill GPU to decode GPU (every GPU pair moves its shard at once)."""
    shard = work.input_tokens * kv_bytes_per_token_per_gpu(arch, fmt, shape, context=work.input_tokens)
    if across_hosts:
        link = cx.Link(NIC_GBPS_PER_GPU / 8.0 * 1e9 * RDMA_EFFICIENCY, cx.RDMA_LATENCY_S, "RDMA")
    else:
        link = cx.intra_host_link(
            accelerator.interconnect, accelerator.interconnect_bandwidth_gbps, GPU_LINK_COPY_EFFICIENCY
        )
    return cx.point_to_point_seconds(shard, link)


def predict_disaggregated(
    arch: DecoderArchitecture,
    accelerator: Accelerator,
    fmt: ServingFormat,
    work: RequestShape,
    split: Disaggregation,
    *,
    shape: GroupShape = GroupShape(),
    across_hosts: bool = False,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> LLMServingPrediction:
    """The x + y replicas together at their maximum sustainable load; rates total over all of them."""
    alone = predict_llm_serving(arch, accelerator, fmt, work, shape=shape, efficiency=efficiency)
    if not alone.fits:
        return alone
    running = float(min(alone.max_concurrent_sequences, efficiency.max_batch * shape.attention_data_parallel))
    step = decode_step_time(arch, fmt, accelerator, shape, running, work.mean_context, efficiency,
                            positions=work.positions_per_step)  # fmt: skip
    step = with_proposer(arch, fmt, accelerator, shape, running, work, efficiency, step)
    decode_rps = split.decode_replicas * running / (work.decode_steps * step.seconds)
    prompts = max(1, PREFILL_CHUNK_TOKENS // work.uncached_tokens)
    chunk = prefill_time(arch, fmt, accelerator, shape, work.input_tokens, efficiency, sequences=prompts,
                         cached_tokens=work.cached_tokens)  # fmt: skip
    prefill_rps = split.prefill_replicas * prompts / chunk.seconds
    rate = min(decode_rps, prefill_rps)
    transfer = kv_transfer_s(arch, fmt, accelerator, shape, work, across_hosts=across_hosts)
    first = first_token_time(arch, fmt, accelerator, shape, work, efficiency).seconds + transfer
    tokens = rate * work.output_tokens
    low, high = alone.output_tokens_per_second_low, alone.output_tokens_per_second_high
    band = (low / alone.output_tokens_per_second, high / alone.output_tokens_per_second)
    return replace(
        alone,
        output_tokens_per_second=tokens,
        output_tokens_per_second_low=tokens * band[0],
        output_tokens_per_second_high=tokens * band[1],
        requests_per_second=rate,
        ttft_ms=first * 1e3,
        tpot_ms=step.seconds / work.tokens_per_step * 1e3,
        batch=running,
        max_concurrent_sequences=alone.max_concurrent_sequences * split.decode_replicas,
        bottleneck="prefill pool" if prefill_rps < decode_rps else step.bottleneck,
        breakdown_ms={
            "kv_transfer": transfer * 1e3,
            "prefill_pool_rps": prefill_rps,
            "decode_pool_rps": decode_rps,
            "decode_step": step.seconds * 1e3,
        },
        disaggregation=split.label,
    )


def disaggregation_problem(split: Disaggregation, group_gpus: int, gpus: int) -> str:
    """Why ``gpus`` cannot hold the x + y replicas of ``group_gpus`` each ('' when they can)."""
    unit = split.replicas * group_gpus
    if gpus % unit:
        return f"{split.label} of {group_gpus}-GPU replicas needs a multiple of {unit} GPUs, not {gpus}"
    return ""
