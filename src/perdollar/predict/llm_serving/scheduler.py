"""The scheduler of a continuous-batching engine, step by step: what
:mod:`perdollar.predict.llm_serving.offered_load` runs to put latencies on a stated load.

Each step carries one token for every decoding sequence, then prompt chunks in admission order up
to the engine's token budget. It is event-driven: runs of identical decode-only steps are taken at
once, so thousands of requests cost milliseconds; arrivals of an open loop come from a fixed seed.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.formats import ServingFormat
from perdollar.predict.llm_serving.load import RequestShape, with_proposer
from perdollar.predict.llm_serving.timing import (
    DEFAULT_EFFICIENCY,
    GroupShape,
    ServingEfficiency,
    _stage_time,
    _weights_read_per_gpu,
    busiest_group_sequences,
    decode_attention_flops,
    kv_bytes_per_token_per_gpu,
)
from perdollar.workload.llm.architecture import DecoderArchitecture

SEED = 20240917
StepSeconds = Callable[[int, tuple[tuple[int, int], ...]], float]


@dataclass(slots=True)
class Samples:
    ttft: list[float]
    e2e: list[float]
    tpot: list[float]
    gaps: list[tuple[float, int]]  # (seconds, tokens that waited it)
    completed_in_window: int
    window_s: float
    running_time: float  # ∫ admitted requests dt over the window
    backlog_at_last_arrival: int


def step_model(
    arch: DecoderArchitecture,
    fmt: ServingFormat,
    accelerator: Accelerator,
    shape: GroupShape,
    work: RequestShape,
    efficiency: ServingEfficiency = DEFAULT_EFFICIENCY,
) -> StepSeconds:
    """Seconds of one scheduler step: ``decoding`` sequences a decode position each (k+1 under
    speculative decoding) and the prompt chunks ``(start, tokens)`` scheduled beside them.

    A chunk of c tokens at offset s computes its c tokens' products, attends to the s + c tokens
    before each of them ((s+c)² − s² pairs, as one whole prompt's I² splits over its chunks) and
    reads the s tokens of cache its earlier chunks left. With P pipeline stages the step's tokens
    move as P micro-batches, as the mixed iteration of :mod:`~perdollar.predict.llm_serving.load`
    moves them. Steps repeat with the same contents: each is computed once.
    """
    stages = shape.pipeline_parallel
    groups = shape.attention_data_parallel
    q_width = arch.num_attention_heads * arch.head_dim
    positions = work.positions_per_step
    per_token_kv = kv_bytes_per_token_per_gpu(arch, fmt, shape, context=work.mean_context)
    decode_flops = decode_attention_flops(arch) * work.mean_context * positions
    known: dict[tuple[int, tuple[tuple[int, int], ...]], float] = {}

    def seconds(decoding: int, chunks: tuple[tuple[int, int], ...]) -> float:
        key = (decoding, chunks)
        if key in known:
            return known[key]
        micro = decoding / stages
        per_rank = busiest_group_sequences(micro, shape) if decoding else 0.0
        prompt_tokens = sum(tokens for _, tokens in chunks) / stages
        pairs = sum((start + tokens) ** 2 - start**2 for start, tokens in chunks) / stages
        # Each chunk is prefilled by its own sequence's group: the busiest group holds the largest
        # chunk, or its even share of them all where there are more chunks than groups.
        group_chunk_tokens, group_pairs = prompt_tokens, pairs
        if groups > 1 and chunks:
            group_chunk_tokens = max(max(tokens for _, tokens in chunks) / stages, prompt_tokens / groups)
            largest_pairs = max((start + tokens) ** 2 - start**2 for start, tokens in chunks) / stages
            group_pairs = max(largest_pairs, pairs / groups) * groups
        attention = decode_flops * per_rank * groups + 2.0 * arch.num_layers * q_width * group_pairs
        earlier = sum(start for start, _ in chunks) / stages
        kv = (per_rank * work.mean_context + earlier) * per_token_kv
        tokens = micro * positions + prompt_tokens
        read = _weights_read_per_gpu(arch, fmt, shape, tokens)
        group_tokens = per_rank * positions + group_chunk_tokens
        step = _stage_time(arch, fmt, accelerator, shape, efficiency, tokens=tokens, bytes_read=read,
                           attention_flops=attention, kv_bytes=kv, group_tokens=group_tokens)  # fmt: skip
        if decoding:
            step = with_proposer(arch, fmt, accelerator, shape, micro, work, efficiency, step)
        known[key] = step.seconds
        return step.seconds

    return seconds


def simulate(
    step_seconds: StepSeconds,
    work: RequestShape,
    cap: int,
    budget: int | None,
    *,
    clients: int | None = None,
    rate: float | None = None,
    warm: int,
    measured: int,
    seed: int = SEED,
) -> Samples:
    """One replica's scheduler over requests 0, 1, 2, …; requests ``warm`` to ``warm + measured``
    are measured, later ones keep the load steady until the last measured one finishes.

    Closed loop (``clients``): that many requests arrive at t = 0 and each completion sends the
    next at once. Open loop (``rate``): Poisson arrivals from ``seed``. The replica admits requests
    first come first served up to ``cap`` at once; a step runs every decoding sequence, then prompt
    chunks in admission order up to ``budget`` tokens (None: whole prompts).
    """
    generator = random.Random(seed)
    positions = work.positions_per_step
    first_offset, prompt_length = work.cached_tokens, work.input_tokens
    decode_steps = math.ceil((work.output_tokens - 1) / work.tokens_per_step)
    end = warm + measured
    arrival: list[float] = []
    first: dict[int, float] = {}
    waiting: deque[int] = deque()
    prefilling: list[list[int]] = []  # [request, next prompt position]
    finishing: list[tuple[int, int]] = []  # heap of (step count at which it ends, request)
    samples = Samples([], [], [], [], 0, 0.0, 0.0, 0)
    now, step_count, next_arrival = 0.0, 0, 0.0
    measured_decoding = 0
    window_start: float | None = 0.0 if warm == 0 else None
    left, completed = measured, 0

    def arrive(at: float) -> None:
        arrival.append(at)
        waiting.append(len(arrival) - 1)

    if clients is not None:
        rate = math.inf  # never drawn: a closed loop's next arrival is its last completion
        for _ in range(clients):
            arrive(0.0)
        next_arrival = math.inf
    else:
        assert rate is not None
        next_arrival = generator.expovariate(rate)

    def complete(request: int, at: float) -> None:
        nonlocal left, window_start, completed
        if warm <= request < end:
            samples.ttft.append(first[request] - arrival[request])
            samples.e2e.append(at - arrival[request])
            if work.output_tokens > 1:
                samples.tpot.append((at - first[request]) / (work.output_tokens - 1))
            left -= 1
        completed += 1
        if window_start is None and completed >= warm:
            window_start = at
        elif window_start is not None:
            samples.completed_in_window += 1
        first.pop(request, None)
        if clients is not None:
            arrive(at)

    while left > 0:
        while next_arrival <= now:  # open loop: every arrival up to now joins the queue
            arrive(next_arrival)
            if len(arrival) == end:
                samples.backlog_at_last_arrival = len(waiting)
            next_arrival += generator.expovariate(rate)
        admitted = len(prefilling) + len(finishing)
        while waiting and admitted < cap:
            prefilling.append([waiting.popleft(), first_offset])
            admitted += 1
        if not admitted:
            now = next_arrival
            continue
        decoding = len(finishing)
        room = math.inf if budget is None else budget - decoding * positions
        chunks: list[tuple[int, int]] = []
        for entry in prefilling:
            if room <= 0:
                break
            tokens = int(min(prompt_length - entry[1], room))
            chunks.append((entry[1], tokens))
            room -= tokens
        if chunks:
            repeat = 1
            seconds = step_seconds(decoding, tuple(chunks))
        else:  # decode only: identical steps until a sequence ends or an arrival can be admitted
            seconds = step_seconds(decoding, ())
            repeat = finishing[0][0] - step_count
            if next_arrival < math.inf and admitted < cap:
                repeat = min(repeat, max(1, math.ceil((next_arrival - now) / seconds)))
        if window_start is not None:
            samples.running_time += admitted * seconds * repeat
        now += seconds * repeat
        step_count += repeat
        if measured_decoding:
            samples.gaps.append((seconds, measured_decoding * repeat))
        while finishing and finishing[0][0] <= step_count:
            _, request = heapq.heappop(finishing)
            measured_decoding -= warm <= request < end
            complete(request, now)
        for index, (_, tokens) in enumerate(chunks):
            prefilling[index][1] += tokens
        done = [entry for entry in prefilling[: len(chunks)] if entry[1] >= prompt_length]
        if done:
            prefilling = [entry for entry in prefilling if entry[1] < prompt_length]
        for request, _ in done:
            first[request] = now
            if decode_steps:
                heapq.heappush(finishing, (step_count + decode_steps, request))
                measured_decoding += warm <= request < end
            else:
                complete(request, now)
    samples.window_s = now - (window_start or 0.0)
    return samples
