"""The context-parallel part of the planner's space: long sequences split over 2, 4 or 8 ranks.

Context parallelism (:mod:`perdollar.predict.llm.context_expert`) pays for a ring of key and
value traffic with a c-fold cut in every rank's activations and matrix products, which only
matters once the sequence is long. So the planner tries it only from
``CONTEXT_PARALLEL_MIN_SEQ_LEN`` tokens on, and then on every shape of the bounded space
(strategy × tensor parallel × pipeline parallel across hosts × activation checkpointing) whose
GPUs and global batch still divide: tensor × pipeline × context parallel divides the GPUs, the
data-parallel ranks left divide the global batch, and the sequence splits into 2 × c equal
chunks (Megatron-Core's load-balanced halves). Shorter jobs get no extra shape at all.

Megatron-Core places the context-parallel ranks next to the tensor-parallel ones, so they share
a host's NVLink whenever tensor × context parallel fits in it: those shapes come first, and
those whose ring crosses hosts after them.
"""

from __future__ import annotations

from dataclasses import replace

from perdollar.predict.llm.plan import TrainingPlan

CONTEXT_PARALLEL = (2, 4, 8)
# Shorter sequences keep the plans they had: up to 8,192 tokens a flash-attention step's
# activations fit beside the states under tensor parallelism and checkpointing, and the ring's
# traffic would only cost time. NVIDIA's long-sequence table for NeMo (NVIDIA/NeMo
# docs/source/performance/performance_long_sequence.md, NeMo 25.04, Llama-3-8B on DGX-B200) runs
# 8k and 16k tokens without context parallelism and first splits sequences at 32k; from 16k on
# the planner prices both and lets the faster one win.
CONTEXT_PARALLEL_MIN_SEQ_LEN = 16_384


def context_shapes(
    gpus_per_node: int,
    nodes: int,
    base: list[TrainingPlan],
    *,
    seq_len: int | None,
    global_batch: int | None,
) -> list[TrainingPlan]:
    """The shapes of ``base`` split over 2, 4 or 8 context-parallel ranks, where that can help."""
    if seq_len is None or seq_len < CONTEXT_PARALLEL_MIN_SEQ_LEN:
        return []
    gpus = gpus_per_node * nodes
    in_host: list[TrainingPlan] = []
    across_hosts: list[TrainingPlan] = []
    for cp in CONTEXT_PARALLEL:
        if seq_len % (2 * cp):
            continue  # no load-balanced halves
        for shape in base:
            split = shape.tensor_parallel * shape.pipeline_parallel * cp
            if gpus % split or (global_batch is not None and global_batch % (gpus // split)):
                continue
            ring_in_host = shape.tensor_parallel * cp <= gpus_per_node
            (in_host if ring_in_host else across_hosts).append(replace(shape, context_parallel=cp))
    return in_host + across_hosts
