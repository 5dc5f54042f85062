"""MaxText on TPU: the achieved share of the bf16 peak by TPU generation, its loss over slices, the
data-parallel gradient all-reduce over the data-centre network (DCN) between slices, and the host
memory that MaxText's offloading remat policies move saved activations to.

The fitted quantities come from MaxText's own published tables (benchmarks/published_maxtext_tpu.csv:
the v4, v5e and v5p configuration READMEs), and
``benchmarks/maxtext_tpu_accuracy.py`` prints the fit and each source held out of it. The network and
host figures are Google's Cloud TPU system-architecture pages.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from perdollar.catalog.model import Accelerator
from perdollar.predict.accelerator_stacks import TrainingStack

# Gradients MaxText reduces between slices: float32, its default weight dtype (configs/base.yml).
GRADIENT_BYTES = 4.0


@dataclass(frozen=True, slots=True)
class TpuSystem:
    """What a TPU generation's hosts give a chip beside the chip itself (Cloud TPU docs).

    dcn_gbps_per_chip: the host's data-centre network bandwidth shared by its chips;
    host_memory_gib_per_chip: the host's DRAM shared by its chips (None: not published, no offload);
    host_link_gbps: the chip's PCIe link to its host, one direction (x16 lanes assumed).
    """

    dcn_gbps_per_chip: float
    host_memory_gib_per_chip: float | None
    host_link_gbps: float
    source: str


SYSTEMS: dict[str, TpuSystem] = {
    "TPU-v5e": TpuSystem(
        25.0, 512 / 8, 256.0, "Cloud TPU v5e page: 2 x 100 Gbps NICs and 512 GiB DRAM per 8-chip host"
    ),
    "TPU-v6e": TpuSystem(
        100.0,
        1536 / 8,
        512.0,
        "Cloud TPU v6e page: 4 x 200 Gbps NICs and 1536 GiB DRAM per 8-chip host, PCIe Gen5",
    ),
    "TPU-v5p": TpuSystem(
        50.0, 448 / 4 * 1e9 / 2**30, 256.0, "Cloud TPU v5p page: 50 Gbps DCN per chip, 448 GB per 4-chip VM"
    ),
    # The v4 page gives no DCN or host-memory figure: v5p's network is taken, and no offload.
    "TPU-v4": TpuSystem(50.0, None, 256.0, "v5p's DCN figure (the Cloud TPU v4 page gives none)"),
}


@dataclass(frozen=True, slots=True)
class MaxTextFit:
    """The fitted terms: each generation's achieved model-FLOPs share of the bf16 peak on one slice,
    the share lost per doubling of slices (beyond the DCN all-reduce itself), and the spec line
    1/efficiency = intercept + slope·(peak TFLOPS / HBM GB/s) that gives a generation without rows."""

    efficiency: Mapping[str, float]
    slice_loss: float
    spec_intercept: float
    spec_slope: float
    source: str

    def generation_efficiency(self, accelerator: Accelerator) -> tuple[float, bool]:
        """(achieved share of the peak on one slice, whether the chip's own rows set it)."""
        own = self.efficiency.get(accelerator.key)
        if own is not None:
            return own, True
        return spec_efficiency(self.spec_intercept, self.spec_slope, accelerator), False


def intensity(accelerator: Accelerator) -> float:
    """Peak bf16 TFLOPS over HBM GB/s: how much work a byte must carry for the chip to stay busy."""
    return (accelerator.peak_bf16_tflops or 0.0) / max(accelerator.memory_bandwidth_gbps or 1.0, 1.0) * 1e3


def spec_efficiency(intercept: float, slope: float, accelerator: Accelerator) -> float:
    return 1.0 / (intercept + slope * intensity(accelerator))


# Fitted on every row of benchmarks/published_maxtext_tpu.csv (benchmarks/maxtext_tpu_accuracy.py
# prints the same numbers; tests/test_maxtext_tpu.py checks they are the fit of those rows).
FIT = MaxTextFit(
    efficiency={"TPU-v4": 0.573, "TPU-v5e": 0.617, "TPU-v5p": 0.663},
    slice_loss=0.0180,
    spec_intercept=1.146,
    spec_slope=2.26e-3,
    source="MaxText's published tables (v4, v5e, v5p configuration READMEs; others by the spec line)",
)


@dataclass(frozen=True, slots=True)
class SliceRun:
    """One MaxText run: ``slices`` slices of ``chips_per_slice`` chips, FSDP (and tensor parallelism)
    over each slice's ICI, data parallelism over DCN between slices."""

    chips_per_slice: int
    slices: int
    params: float  # parameters whose gradients are reduced between slices
    tokens_per_chip: float  # tokens a chip computes per optimizer step


def slice_factor(slice_loss: float, slices: int) -> float:
    """The share of one slice's efficiency kept on ``slices`` slices (stragglers, synchronisation)."""
    return max(1.0 - slice_loss * math.log2(max(slices, 1)), 0.1)


def dcn_all_reduce_s(run: SliceRun, system: TpuSystem) -> float:
    """Seconds of the gradient all-reduce between slices: each chip's FSDP shard of the gradients
    crosses DCN twice (reduce-scatter and all-gather of a ring over the slices), its host's NICs
    shared by its chips. Not overlapped with compute: it follows the last backward layer."""
    if run.slices <= 1:
        return 0.0
    shard = GRADIENT_BYTES * run.params / run.chips_per_slice
    return 2.0 * (run.slices - 1) / run.slices * shard / (system.dcn_gbps_per_chip * 1e9 / 8.0)


def achieved_share(
    efficiency: float, slice_loss: float, run: SliceRun, flops_per_token: float, peak_tflops: float,
    system: TpuSystem,
) -> float:  # fmt: skip
    """The run's model FLOPs over the peak: compute at the slice-scaled efficiency, then the DCN
    all-reduce."""
    work = run.tokens_per_chip * flops_per_token
    compute = work / (efficiency * slice_factor(slice_loss, run.slices) * peak_tflops * 1e12)
    return work / ((compute + dcn_all_reduce_s(run, system)) * peak_tflops * 1e12)


# ---- the fit, shared with the benchmark and the test that check it ----


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """One published MaxText row, with what the fit needs."""

    source: str
    chip: str
    run: SliceRun
    achieved: float  # model FLOPs over the bf16 peak, as published or from tokens per second
    flops_per_token: float


def _corrected(row: PublishedRun, slice_loss: float, peak: float, system: TpuSystem) -> float:
    """The one-slice efficiency that reproduces ``row`` under ``slice_loss`` and its DCN time."""
    work = row.run.tokens_per_chip * row.flops_per_token
    step = work / (row.achieved * peak * 1e12) - dcn_all_reduce_s(row.run, system)
    return work / (max(step, 1e-9) * peak * 1e12) / slice_factor(slice_loss, row.run.slices)


def _geometric_mean(values: Iterable[float]) -> float:
    kept = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in kept) / len(kept))


def fit_spec_line(
    efficiency: Mapping[str, float], accelerators: Mapping[str, Accelerator]
) -> tuple[float, float]:
    """(intercept, slope) of 1/efficiency against the chips' peak-over-bandwidth, least squares."""
    points = [(intensity(accelerators[k]), 1.0 / e) for k, e in efficiency.items()]
    if len(points) == 1:
        return points[0][1], 0.0
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    var = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / var if var else 0.0
    slope = max(slope, 0.0)  # a chip that needs more work per byte is never easier to keep busy
    return mean_y - slope * mean_x, slope


def fit(rows: Iterable[PublishedRun], accelerators: Mapping[str, Accelerator]) -> MaxTextFit:
    """Each generation's efficiency (geometric mean of its rows, each corrected to one slice) and
    the slice loss minimising the squared log error of every row."""
    runs = list(rows)

    def efficiencies(loss: float) -> dict[str, float]:
        by_chip: dict[str, list[float]] = {}
        for r in runs:
            peak = accelerators[r.chip].peak_bf16_tflops or 0.0
            by_chip.setdefault(r.chip, []).append(_corrected(r, loss, peak, SYSTEMS[r.chip]))
        return {chip: _geometric_mean(values) for chip, values in by_chip.items()}

    def error(loss: float) -> float:
        eff = efficiencies(loss)
        total = 0.0
        for r in runs:
            chip = accelerators[r.chip]
            share = achieved_share(eff[r.chip], loss, r.run, r.flops_per_token, chip.peak_bf16_tflops or 0.0,
                                   SYSTEMS[r.chip])  # fmt: skip
            total += math.log(share / r.achieved) ** 2
        return total

    low, high = 0.0, 0.1
    for _ in range(60):  # golden-section search: the error is one-humped in the loss
        a, b = low + (high - low) * 0.382, low + (high - low) * 0.618
        low, high = (low, b) if error(a) <= error(b) else (a, high)
    loss = (low + high) / 2
    eff = efficiencies(loss)
    intercept, slope = fit_spec_line(eff, accelerators)
    return MaxTextFit(eff, loss, intercept, slope, source=FIT.source)


def predicted_share(fitted: MaxTextFit, row: PublishedRun, accelerators: Mapping[str, Accelerator]) -> float:
    chip = accelerators[row.chip]
    efficiency, _ = fitted.generation_efficiency(chip)
    peak = chip.peak_bf16_tflops or 0.0
    return achieved_share(
        efficiency, fitted.slice_loss, row.run, row.flops_per_token, peak, SYSTEMS[row.chip]
    )


# ---- a prediction ----


def maxtext_step_s(
    accelerator: Accelerator, run: SliceRun, flops_per_token: float, offloaded_gib: float = 0.0
) -> tuple[float, float, float]:
    """(compute, DCN all-reduce, host transfers) seconds of one MaxText step: compute at the
    generation's fitted share and the slice loss; ``offloaded_gib`` of saved inputs a chip writes to
    its host and reads back each step over its host link, beside the compute."""
    system = SYSTEMS[accelerator.key]
    efficiency, _ = FIT.generation_efficiency(accelerator)
    peak = (accelerator.peak_bf16_tflops or 0.0) * 1e12
    compute = (
        run.tokens_per_chip * flops_per_token / (efficiency * slice_factor(FIT.slice_loss, run.slices) * peak)
    )
    offload = 2.0 * offloaded_gib * 2**30 / (system.host_link_gbps * 1e9 / 8.0)
    return compute, dcn_all_reduce_s(run, system), offload


def training_stack_text(accelerator: Accelerator, stack: TrainingStack) -> str:
    """The stack a row trains under and where its efficiency comes from, in a line."""
    if stack.software_stack == "xla":
        efficiency, own = FIT.generation_efficiency(accelerator)
        origin = FIT.source if own else (
            f"no MaxText table for {accelerator.key}: the spec line through "
            f"{', '.join(sorted(FIT.efficiency))}, by peak over memory bandwidth"
        )  # fmt: skip
        return (
            f"{stack.label} on {accelerator.family}, efficiency {efficiency:.1%} of bf16 peak from {origin}"
        )
    fraction = stack.model_flops_fraction
    if fraction is None:
        return f"{stack.label} on {accelerator.family}: no published training table fitted"
    sources = "; ".join(stack.sources.values()) or "no published table"
    if accelerator.key in stack.fitted_on:
        origin = sources
    else:
        fitted = "/".join(sorted(stack.fitted_on))
        origin = f"no table for {accelerator.key}: {fitted} rows ({sources}) scaled by the chip's specs"
    return f"{stack.label} on {accelerator.family}, efficiency {fraction:.1%} of bf16 peak from {origin}"
