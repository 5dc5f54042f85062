"""The global efficiency parameters of the roofline and the observed error of each basis.

The shipped values live in ``predict/data/params.json``; ``python -m perdollar.predict.lab.fit``
regenerates that file from a published measurement set and records how (provenance, the
held-out errors the bands are derived from).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields, replace
from functools import lru_cache
from importlib import resources
from typing import Any

# Parameters the fit may move, with the bounds that keep them physical.
FITTED_BOUNDS: dict[str, tuple[float, float]] = {
    "tensor_core_efficiency": (0.15, 0.95),
    "simt_efficiency": (0.2, 0.98),
    "conv_relative_efficiency": (0.3, 1.5),
    "attention_relative_efficiency": (0.2, 1.5),
    "vector_efficiency": (0.05, 0.9),
    "memory_efficiency": (0.3, 0.95),
    "kernel_overhead_s": (2e-6, 40e-6),  # a kernel launch costs microseconds on any GPU
    "step_overhead_s": (1e-6, 5e-3),
    "bandwidth_exponent": (0.0, 0.5),
    "fallback_bandwidth_exponent": (0.0, 0.5),
    "tf32_share_of_fp32": (0.0, 1.0),
    "power_reference_w_per_sm_ghz": (0.5, 4.0),
    "power_exponent": (0.0, 1.5),
    "power_exponent_simt": (0.0, 1.5),
}


@dataclass(frozen=True, slots=True)
class ModelParams:
    """Efficiencies of the per-operator roofline, shared by every accelerator.

    Efficiencies are fractions of the datasheet peak; ``large_chip_exponent`` lowers the
    tensor-core efficiency of chips whose peak is far above 100 TFLOPS (they are harder to
    keep fed), and ``bandwidth_exponent`` does the same for very high memory bandwidth.
    ``large_chip_exponent`` is not fitted: it is read from published large-GEMM rates (below).
    """

    tensor_core_efficiency: float = 0.55
    simt_efficiency: float = 0.7
    conv_relative_efficiency: float = 0.9
    attention_relative_efficiency: float = 0.6
    vector_efficiency: float = 0.3
    memory_efficiency: float = 0.75
    kernel_overhead_s: float = 5e-6
    # Framework time per step outside the kernels (Python, session run, synchronisation).
    step_overhead_s: float = 2e-4
    # Large fp16 GEMMs (PyTorch matmul, n = 8192) reach 83% of peak on an A100 (312 TFLOPS),
    # 77% on an H100 SXM (989) and 72% on a B200 (2,250) (benchmarks/published_gemm_rates.csv):
    # pairwise slopes of log share against log peak of 0.065-0.082. Fitted on workload rows of
    # older software instead, the exponent came out near 0.25 and modelled those GEMMs 30-40%
    # slow. Fixed here, with the row weights of fit.pair_weights, the workload fit held out one
    # GPU at a time is unchanged (benchmarks/RESULTS.md).
    large_chip_exponent: float = 0.08
    bandwidth_exponent: float = 0.1
    # The fallback profile's memory operator stands for whole-model streams (weights, KV cache)
    # rather than a traced step's many activation kernels: its own high-bandwidth penalty.
    fallback_bandwidth_exponent: float = 0.1
    # Share of fp32 GEMM work that runs as TF32 on chips that have TF32 (cuDNN and NGC defaults).
    tf32_share_of_fp32: float = 0.5
    # Compute rates scale by min(1, (W per SM-GHz) / reference) ** exponent (power-capped boards).
    # A board capped far below its boost clock runs at its minimum voltage, where power grows
    # linearly with clock: exponent 1 (the cube law of voltage-and-clock scaling, exponent 1/3,
    # holds only near the boost clock, where the cap does not bind).
    power_reference_w_per_sm_ghz: float = 2.0
    power_exponent: float = 1.0  # for tensor-core GEMMs
    power_exponent_simt: float = 1.0  # for everything on the SIMT pipelines
    # Not fitted (no AMD chip in the development set): the share of the CUDA-fitted compute and
    # memory efficiencies that AMD's ROCm stack reaches, read from published comparisons
    # (benchmarks/rocm_check.py): PyTorch GEMMs on an MI210 reach 0.82-0.86 of the CUDA-fitted
    # rate; MI300X against H100/H200 implies 0.80 in MLPerf Inference v4.1 (Llama 2 70B), 0.68 in
    # fp8 GPT-2 XL training and 0.50 in fp8 Llama 3 8B FSDP training. 0.7 is their geometric mean
    # (0.69), one value per source. Without it a spec-only MI300X beat an H100 by 1.3x.
    rocm_efficiency: float = 0.7
    gemm_tile: int = 128  # output tile edge for the wave-quantisation of GEMMs

    def with_values(self, values: dict[str, float]) -> ModelParams:
        # The fitted fields, named at run time: mypy checks the floats against every field, gemm_tile too.
        return replace(self, **values)  # type: ignore[arg-type]


# The lowest and highest share of the CUDA-fitted efficiencies that a published ROCm source
# implies (benchmarks/rocm_check.py): the spread around rocm_efficiency that an AMD band adds.
ROCM_SHARE_RANGE = (0.50, 0.84)


@dataclass(frozen=True, slots=True)
class ErrorQuantiles:
    """Quantiles of log(actual / predicted) observed on held-out GPUs for one basis."""

    n: int
    q10: float
    q50: float
    q90: float

    def on_stack(self, stack: str, rocm_efficiency: float) -> ErrorQuantiles:
        """These errors on a chip of ``stack``: on ROCm, widened by the spread of the published
        ROCm shares around ``rocm_efficiency`` (an independent error: added in quadrature)."""
        if stack != "rocm":
            return self
        below = math.log(ROCM_SHARE_RANGE[0] / rocm_efficiency)
        above = math.log(ROCM_SHARE_RANGE[1] / rocm_efficiency)
        return ErrorQuantiles(
            self.n, -math.hypot(min(self.q10, 0.0), below), self.q50, math.hypot(max(self.q90, 0.0), above)
        )


# Used only when no fitted file is present: deliberately wide, never narrower than the data.
_DEFAULT_ERRORS = {
    "measured": ErrorQuantiles(n=0, q10=-0.05, q50=0.0, q90=0.05),
    "calibrated": ErrorQuantiles(n=0, q10=-0.2, q50=0.0, q90=0.2),
    "calibrated-fallback": ErrorQuantiles(n=0, q10=-0.3, q50=0.0, q90=0.3),  # published models only
    "spec": ErrorQuantiles(n=0, q10=-0.5, q50=0.0, q90=0.5),
    "cpu-spec": ErrorQuantiles(n=0, q10=-1.0, q50=0.0, q90=1.0),
}


@dataclass(frozen=True, slots=True)
class ShippedModel:
    params: ModelParams
    errors: dict[str, ErrorQuantiles] = field(default_factory=lambda: dict(_DEFAULT_ERRORS))
    fallback: dict[str, dict[str, float]] = field(default_factory=dict)  # family → fitted descriptor
    provenance: dict[str, object] = field(default_factory=dict)  # how the fit was made, as JSON

    def errors_for(self, basis: str, stack: str = "cuda") -> ErrorQuantiles:
        """The observed errors behind a band of ``basis`` on a chip of ``stack`` (a measurement
        on the chip itself needs no allowance for its software stack)."""
        errors = self.errors.get(basis) or self.errors["spec"]
        return errors if basis == "measured" else errors.on_stack(stack, self.params.rocm_efficiency)


def params_to_json(model: ShippedModel) -> dict[str, object]:
    return {
        "params": asdict(model.params),
        "errors": {k: asdict(v) for k, v in model.errors.items()},
        "fallback": model.fallback,
        "provenance": model.provenance,
    }


def params_from_json(payload: dict[str, Any]) -> ShippedModel:
    # ``payload``: the shipped JSON file as read, its sections spread into the dataclasses.
    known = {f.name for f in fields(ModelParams)}
    params = ModelParams(**{k: v for k, v in payload.get("params", {}).items() if k in known})
    errors = dict(_DEFAULT_ERRORS)
    errors.update({k: ErrorQuantiles(**v) for k, v in payload.get("errors", {}).items()})
    return ShippedModel(params, errors, payload.get("fallback", {}), payload.get("provenance", {}))


@lru_cache(maxsize=1)
def shipped_model() -> ShippedModel:
    """The fitted parameters bundled with perdollar (defaults when the file is absent)."""
    try:
        text = resources.files("perdollar.predict").joinpath("data/params.json").read_text()
    except (FileNotFoundError, OSError):
        return ShippedModel(ModelParams())
    return params_from_json(json.loads(text))
