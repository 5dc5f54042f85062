"""NxD Training (NeuronX Distributed) on Trainium: a step as the plan runs it — compute at a fitted
share of the bf16 peak, tensor parallelism's collectives over NeuronLink at a fitted share of its
bandwidth, the pipeline's bubble, the ZeRO-1 data-parallel gradient reduction over the slowest link
of its ring (EFA between instances) and the sharded AdamW update.

The two fitted quantities come from Neuron's published training tables
(benchmarks/published_nxd_training.csv: the trn1 ``training_data_decoder.csv`` behind the Neuron
documentation's "Trn1/Trn1n Training Performance" page, releases 2.15 to 2.24), and
``benchmarks/nxd_training_accuracy.py`` prints the fit and each release held out of it. The link
bandwidths are the interconnect table of Neuron's trainium2.rst; a chip without rows of
its own (Trainium2) keeps Trainium's shares, the compute share scaled by the chips' peak over
memory bandwidth.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.accelerator_stacks import TrainingStack

# NxD trains with bf16 autocast and an fp32 optimizer ("Autocast:BF16+FP32Optimizer" in Neuron's
# tables): gradients are reduced in fp32.
GRADIENT_BYTES = 4.0
# The collectives one transformer layer's tensor parallelism runs per micro-batch: two in the
# forward, two in the backward and two in the forward recomputed under activation checkpointing
# (sequence parallelism's all-gather and reduce-scatter move what one all-reduce moves).
TENSOR_PARALLEL_COLLECTIVES = 6
# Bytes AdamW reads and writes per parameter of its shard: the fp32 master weight, gradient and two
# moments read, the weight and moments written, the bf16 copy written.
ADAMW_BYTES_PER_PARAM = 30.0
# The published runs are on "trn1.32xlarge/trn1n.32xlarge": the fit takes the lower EFA figure.
FITTED_EFA_GBPS = 800.0


@dataclass(frozen=True, slots=True)
class NeuronChip:
    """What a Trainium generation's chip-to-chip NeuronLink gives each chip (GB/s)."""

    link_gbps: float
    source: str


CHIPS: dict[str, NeuronChip] = {
    "Trainium": NeuronChip(384.0, "Neuron docs trainium2.rst: inter-chip interconnect 384 GB/s per chip"),
    "Trainium2": NeuronChip(1280.0, "Neuron docs trainium2.rst: inter-chip interconnect 1280 GB/s per chip"),
}


@dataclass(frozen=True, slots=True)
class NxdRun:
    """One NxD Training run: ``nodes`` instances of ``chips_per_node`` chips, tensor parallelism over
    ``tensor_parallel`` chips of one instance, ``pipeline_parallel`` stages, data parallelism over the
    rest (ranks numbered tensor-parallel first, then data-parallel, so one data-parallel ring has
    several ranks in an instance when the tensor-parallel group is smaller than it)."""

    chips_per_node: int
    nodes: int
    tensor_parallel: int  # chips
    pipeline_parallel: int
    zero1: bool
    micro_batch: int
    global_batch: int
    seq_len: int
    params: float
    layers: int
    hidden: int
    network_gbps: float  # the instance's EFA bandwidth

    @property
    def chips(self) -> int:
        return self.chips_per_node * self.nodes

    @property
    def data_parallel(self) -> int:
        return max(self.chips // (self.tensor_parallel * self.pipeline_parallel), 1)


@dataclass(frozen=True, slots=True)
class NxdFit:
    """compute_share: the achieved share of the bf16 peak of the model's FLOPs alone;
    link_share: the achieved share of the chip's NeuronLink bandwidth in collectives."""

    compute_share: float
    link_share: float
    source: str
    chip: str = "Trainium"  # the chip whose rows set the fit
    chip_intensity: float = 190.0 / 820.0  # its peak bf16 TFLOPS over HBM GB/s (the catalog's)


# Fitted on every row of benchmarks/published_nxd_training.csv (benchmarks/nxd_training_accuracy.py
# prints the same numbers; tests/test_nxd_trainium.py checks they are the fit of those rows).
FIT = NxdFit(
    compute_share=0.397,
    link_share=0.266,
    source="Neuron's trn1 training performance tables (training_data_decoder.csv, Neuron 2.15-2.24)",
)


@dataclass(frozen=True, slots=True)
class NxdStep:
    """Seconds of one optimizer step, by term (none of them overlapped with another)."""

    compute_s: float  # the model's FLOPs, with the pipeline's bubble
    tensor_parallel_s: float
    data_parallel_s: float
    optimizer_s: float

    @property
    def communication_s(self) -> float:
        return self.tensor_parallel_s + self.data_parallel_s

    @property
    def step_s(self) -> float:
        return self.compute_s + self.communication_s + self.optimizer_s


def intensity(accelerator: Accelerator) -> float:
    """Peak bf16 TFLOPS over HBM GB/s: how much work a byte must carry for the chip to stay busy."""
    return (accelerator.peak_bf16_tflops or 0.0) / max(accelerator.memory_bandwidth_gbps or 1.0, 1.0)


def chip_compute_share(fitted: NxdFit, accelerator: Accelerator) -> float:
    """The chip's compute share: its own where its rows set the fit, else the fitted chip's share
    scaled by how much harder (higher peak per byte) the chip is to keep busy, never above it."""
    if accelerator.key == fitted.chip:
        return fitted.compute_share
    ratio = fitted.chip_intensity / max(intensity(accelerator), 1e-9)
    return fitted.compute_share * min(ratio, 1.0)


def pipeline_bubble(run: NxdRun) -> float:
    """The 1F1B schedule's idle share over its busy time: (stages - 1) / micro-batches."""
    micro_batches = max(run.global_batch / (run.data_parallel * run.micro_batch), 1.0)
    return (run.pipeline_parallel - 1) / micro_batches


def tensor_parallel_bytes(run: NxdRun) -> float:
    """Bytes one chip sends in tensor parallelism's collectives over a step: each of a stage's
    layers runs its collectives on every token of the rank's batch (bf16 activations), a ring moving
    2·(TP-1)/TP of the buffer."""
    if run.tensor_parallel <= 1:
        return 0.0
    tokens = run.global_batch * run.seq_len / run.data_parallel
    ring = 2.0 * (run.tensor_parallel - 1) / run.tensor_parallel
    layers = run.layers / run.pipeline_parallel
    return tokens * layers * TENSOR_PARALLEL_COLLECTIVES * ring * run.hidden * 2.0


def data_parallel_s(run: NxdRun, link_gbps: float) -> float:
    """Seconds of the gradient reduction over data-parallel ranks (ZeRO-1's reduce-scatter and
    all-gather move what an all-reduce moves): each ring's slowest link is EFA when it leaves the
    instance, its NeuronLink otherwise. It follows the last backward micro-batch, not overlapped."""
    dp = run.data_parallel
    if dp <= 1:
        return 0.0
    shard = GRADIENT_BYTES * run.params / (run.tensor_parallel * run.pipeline_parallel)
    moved = 2.0 * (dp - 1) / dp * shard
    ranks_per_node = min(dp, max(run.chips_per_node // run.tensor_parallel, 1))
    if ranks_per_node >= dp:
        return moved / (link_gbps * 1e9)
    rings_per_node = run.chips_per_node / ranks_per_node
    return rings_per_node * moved / (run.network_gbps * 1e9 / 8.0)


def optimizer_s(run: NxdRun, accelerator: Accelerator) -> float:
    """The AdamW update of a chip's shard, bound by HBM: ZeRO-1 splits it over the data-parallel ranks."""
    shard = run.params / (run.tensor_parallel * run.pipeline_parallel)
    if run.zero1:
        shard /= run.data_parallel
    return shard * ADAMW_BYTES_PER_PARAM / (max(accelerator.memory_bandwidth_gbps, 1.0) * 1e9)


def step_terms(
    fitted: NxdFit, accelerator: Accelerator, run: NxdRun, flops_per_token: float, compute_share: float
) -> NxdStep:
    peak = (accelerator.peak_bf16_tflops or 0.0) * 1e12
    link = CHIPS[accelerator.key].link_gbps if accelerator.key in CHIPS else CHIPS["Trainium"].link_gbps
    work = run.global_batch * run.seq_len * flops_per_token / run.chips
    compute = work / (compute_share * peak) * (1.0 + pipeline_bubble(run))
    tensor = tensor_parallel_bytes(run) / (fitted.link_share * link * 1e9)
    return NxdStep(
        compute, tensor, data_parallel_s(run, fitted.link_share * link), optimizer_s(run, accelerator)
    )


def achieved_share(step: NxdStep, accelerator: Accelerator, run: NxdRun, flops_per_token: float) -> float:
    """The run's model FLOPs over the chips' bf16 peak for the whole step."""
    work = run.global_batch * run.seq_len * flops_per_token / run.chips
    return work / (step.step_s * (accelerator.peak_bf16_tflops or 0.0) * 1e12)


# ---- the fit, shared with the benchmark and the test that check it ----


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One published NxD Training row, with what the fit needs."""

    source: str  # the Neuron release whose documentation carried the table
    model: str
    run: NxdRun
    achieved: float  # model FLOPs over the bf16 peak, from sequences per second
    flops_per_token: float


def _compute_share_of(row: PublishedRun, link_share: float, accelerator: Accelerator) -> float:
    """The compute share that reproduces ``row`` under ``link_share``."""
    probe = step_terms(NxdFit(1.0, link_share, ""), accelerator, row.run, row.flops_per_token, 1.0)
    work = row.run.global_batch * row.run.seq_len * row.flops_per_token / row.run.chips
    peak = (accelerator.peak_bf16_tflops or 0.0) * 1e12
    step = work / (row.achieved * peak)
    left = step - probe.communication_s - probe.optimizer_s
    return probe.compute_s / max(left, 1e-9)


def fit(rows: Iterable[PublishedRun], accelerator: Accelerator) -> NxdFit:
    """The link share minimising the squared log error of every row, each row's compute share
    under it pooled by geometric mean."""
    runs = list(rows)

    def compute_share(link_share: float) -> float:
        shares = [_compute_share_of(r, link_share, accelerator) for r in runs]
        return math.exp(sum(math.log(s) for s in shares) / len(shares))

    def error(log_link: float) -> float:
        link_share = math.exp(log_link)
        candidate = NxdFit(compute_share(link_share), link_share, "")
        return sum(math.log(predicted_share(candidate, r, accelerator) / r.achieved) ** 2 for r in runs)

    low, high = math.log(0.02), math.log(1.0)
    for _ in range(60):  # golden-section search over the log of the link share
        a, b = low + (high - low) * 0.382, low + (high - low) * 0.618
        low, high = (low, b) if error(a) <= error(b) else (a, high)
    link_share = math.exp((low + high) / 2)
    return NxdFit(compute_share(link_share), link_share, FIT.source, FIT.chip, intensity(accelerator))


def predicted_share(fitted: NxdFit, row: PublishedRun, accelerator: Accelerator) -> float:
    step = step_terms(fitted, accelerator, row.run, row.flops_per_token, fitted.compute_share)
    return achieved_share(step, accelerator, row.run, row.flops_per_token)


# ---- a prediction ----


def nxd_step(accelerator: Accelerator, run: NxdRun, flops_per_token: float) -> NxdStep:
    """One NxD Training step of ``run`` on ``accelerator`` under the published fit."""
    return step_terms(FIT, accelerator, run, flops_per_token, chip_compute_share(FIT, accelerator))


def nxd_stack_text(accelerator: Accelerator, stack: TrainingStack) -> str:
    """The stack a row trains under and where its efficiency comes from, in a line."""
    if accelerator.key == FIT.chip:
        origin = FIT.source
    else:
        origin = (
            f"no NxD Training table for {accelerator.family}: scaled from {FIT.chip} by peak and "
            f"bandwidth ({FIT.source})"
        )
    return (
        f"{stack.label} on {accelerator.family}, compute {chip_compute_share(FIT, accelerator):.1%} of bf16 "
        f"peak and NeuronLink {FIT.link_share:.1%} of its bandwidth, from {origin}"
    )
