"""The fitted efficiencies of the serving model, one set per serving engine.

A roofline of datasheet peaks is always optimistic; these few fractions and costs say how much
of each peak an engine's kernels reach and what it spends beside them. They are fitted to
published figures (benchmarks/llm_serving_accuracy.py, each GPU held out of its own fit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class ServingEfficiency:
    """The few fitted parameters of the serving model (shipped defaults: benchmarks/llm_serving_accuracy.py).

    bandwidth: achieved fraction of the datasheet memory bandwidth when streaming 16-bit or fp8
    weights and KV; weight_only_bandwidth: the same for weight-only quantised formats, whose
    kernels dequantise while reading; compute: achieved fraction of the dense tensor peak in
    large matrix products (prefill, decode at large batch); kv_bandwidth: achieved fraction of the
    bandwidth in attention's reads of the paged KV cache; step_overhead_s_per_layer: launch
    and synchronisation time per layer and step that no roofline sees; bytes_per_sm_cycle: the
    bytes a latency-bound kernel keeps in flight per SM and cycle, which caps the bandwidth a
    batch-1 matrix-vector product reaches on chips with many bytes/s per SM (inf: no ceiling);
    allreduce_bandwidth: achieved share of the link's one-way bandwidth in the tensor-parallel
    all-reduces (messages of a few MB reach well under a link's peak). Mixture-of-experts layers
    (:mod:`perdollar.predict.llm_serving.moe_layer`): moe_floor_s, the fixed time of the engine's
    fused-MoE kernels in one layer and step (top-k, row alignment, quantisation, sums), whatever
    the batch; expert_bandwidth, the share of the datasheet bandwidth at which the grouped expert
    products stream 16-bit and (block-scaled) fp8 weights; expert_weight_only_bandwidth, the same
    for the 4-bit MoE kernels that dequantise as they read (W4A16 Marlin MoE, MXFP4), their own
    kernels rather than the dense weight-only ones (None: the format's dense share);
    exchange_overlap, the share of the expert-parallel dispatch and combine an engine hides
    behind the experts' products.
    """

    bandwidth: float = 0.80
    weight_only_bandwidth: float = 0.60
    compute: float = 0.55
    kv_bandwidth: float = 0.80  # attention's reads of the (paged) KV cache
    step_overhead_s_per_layer: float = 8e-6
    # Host time of one engine step (scheduling, sampling, a CUDA-graph replay), paid once a step
    # whatever the layer count: what an engine spends beside the GPU's kernels.
    step_overhead_s: float = 0.0
    allreduce_latency_nvlink_s: float = 8e-6
    allreduce_latency_pcie_s: float = 25e-6
    # AMD Infinity Fabric (xGMI) ring step: between NVLink's and PCIe's; no multi-GPU ROCm row fits it.
    allreduce_latency_xgmi_s: float = 12e-6
    allreduce_bandwidth: float = 1.0
    bytes_per_sm_cycle: float = math.inf
    memory_utilisation: float = 0.90  # vLLM's default gpu_memory_utilization
    reserve_gib: float = 1.0  # activations, CUDA graphs and workspace beside weights and KV
    max_batch: int = 256  # the engine's cap on running sequences (vLLM's default max_num_seqs)
    # Neutral by default (no floor, the dense streaming share, nothing hidden): each engine's record
    # sets its own.
    moe_floor_s: float = 0.0
    expert_bandwidth: float | None = None
    expert_weight_only_bandwidth: float | None = None
    exchange_overlap: float = 0.0
    # How an engine runs a prompt, not fitted (neutral by default: one fused pass, scores kept on
    # chip, the catalog's tensor rate). prompt_ubatch_tokens: the micro-batch a prompt is split
    # into, which layer-split GPUs pipeline, prompt_batch_tokens of it at a time (0: no pipelining);
    # score_bytes_per_element: the bytes each attention score of each head moves through memory
    # where attention is not fused (0: flash attention); fp16_accumulate: the fp16 matrix
    # products accumulate in fp16, which GeForce cards run at twice their fp32-accumulate rate.
    prompt_ubatch_tokens: int = 0
    prompt_batch_tokens: int = 0
    score_bytes_per_element: float = 0.0
    fp16_accumulate: bool = False


# llama.cpp's prompt processing as its CUDA back end ran it in the development set's builds
# (2024): llama-bench's defaults of a 2048-token batch in 512-token micro-batches, which the
# scheduler pipelines over layer-split GPUs (ggml-backend's pipeline copies); flash attention off,
# so each layer writes its scores as an fp32 matrix (4 bytes), softmax reads and writes it (8),
# it is converted to fp16 for the cuBLAS product with V (4 read, 2 written) which reads it (2):
# 20 bytes a score; the cuBLAS products ask for fp16 compute (CUBLAS_COMPUTE_16F).
def with_llama_cpp_prompt(eff: ServingEfficiency) -> ServingEfficiency:
    """``eff`` running prompts as llama.cpp does (the facts above, not fitted)."""
    return replace(
        eff, prompt_ubatch_tokens=512, prompt_batch_tokens=2048, score_bytes_per_element=20.0,
        fp16_accumulate=True,
    )  # fmt: skip


# Fitted on every row of each engine in the development set with an overhead per layer
# (benchmarks/llm_serving_accuracy.py prints the same fit with each GPU held out; `perdollar
# validate` refits them so). Predictions take each engine's record in engines.py instead, whose
# host time is paid once a step.
ENGINE_EFFICIENCY = {
    "tensorrt-llm": ServingEfficiency(
        bandwidth=0.925,
        # TensorRT-LLM's tables hold no int4 rows: weight-only kernels are taken to stream at 75%
        # of the datasheet (an assumption, not a fit).
        weight_only_bandwidth=0.75,
        compute=0.65,
        kv_bandwidth=0.75,
        # Still large (18 ms a step for an 80-layer model): scheduling and launches
        # that the GPU terms do not carry; it also sets the batch-1 TTFT of short prompts.
        step_overhead_s_per_layer=220e-6,
        allreduce_bandwidth=0.40,
        # No in-flight ceiling: its batched kernels keep enough loads outstanding (the fit agrees).
    ),
    "llama.cpp": with_llama_cpp_prompt(
        ServingEfficiency(
            bandwidth=0.90,
            weight_only_bandwidth=0.925,
            # Of the fp16-accumulate rate on GeForce cards, the catalog's rate elsewhere.
            compute=0.40,
            # Its batch-1 attention reads the cache far below the bandwidth: tokens/s fall with
            # context about four times faster than the KV bytes alone would say.
            kv_bandwidth=0.20,
            step_overhead_s_per_layer=90e-6,
            # Its batch-1 mat-vec kernels reach about 6.5 bytes/SM-cycle: an A100 (108 SMs at 1.41 GHz)
            # tops out near 1.0 TB/s of its 2.04, while GDDR boards hit their datasheet first.
            bytes_per_sm_cycle=6.5,
        )
    ),
}
DEFAULT_EFFICIENCY = ENGINE_EFFICIENCY["tensorrt-llm"]
# Where every fit starts (the dataclass's round defaults, no in-flight ceiling): never the shipped
# parameters, which saw every GPU, so that a GPU held out of a fit cannot inform it.
FIT_START = ServingEfficiency()
# An engine whose kernels run prompts their own way starts from FIT_START with that way.
ENGINE_FIT_STARTS = {"llama.cpp": with_llama_cpp_prompt(FIT_START)}


def fit_start(engine: str) -> ServingEfficiency:
    """Where the fit of ``engine``'s published rows starts."""
    return ENGINE_FIT_STARTS.get(engine, FIT_START)
