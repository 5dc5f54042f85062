"""Serving predictions calibrated on the user's own endpoint (`serve-bench WORKLOAD --url …`).

A measured endpoint says how efficient its serving engine is: vLLM, TGI or llama.cpp reach
different fractions of a GPU's bandwidth and compute than the shipped parameters assume. The
engine's efficiency carries from one GPU to another (the leave-one-GPU-out check of
benchmarks/llm_serving_accuracy.py rests on that), so the parameters are rescaled to the
endpoint's light-load readings and then predict every other accelerator and degree.

From each stored run the lightest offered load that succeeded is read: its median time per
output token is a batch-1 decode step, its median time to first token one prefill of the prompt.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from perdollar.catalog.model import Accelerator
from perdollar.measure.result import Measurement
from perdollar.predict.llm_serving.engines import DEFAULT_ENGINE
from perdollar.predict.llm_serving.formats import peak_tflops, serving_format, unsupported_reason
from perdollar.predict.llm_serving.published import ServingCase, predict_case
from perdollar.predict.llm_serving.timing import GroupShape, ServingEfficiency
from perdollar.workload.llm.architecture import DecoderArchitecture

_UNKNOWN_FORMATS = ("unknown", "", None)
# A reading faster than this fraction of the chip's physical floor is refused: datasheet peaks are
# upper bounds, so even a perfect engine stays above the floor; 20% leaves room for a spec's rounding.
PHYSICS_MARGIN = 0.8


@dataclass(frozen=True, slots=True)
class EndpointReading:
    """One endpoint run at light load, as the calibration uses it."""

    accelerator_key: str
    gpus: int
    precision: str
    input_tokens: int
    output_tokens: int
    tpot_ms: float
    ttft_ms: float
    engine: str | None = None  # the engine the endpoint ran, when the run recorded it


@dataclass(frozen=True, slots=True)
class ServingCalibration:
    efficiency: ServingEfficiency
    readings: tuple[EndpointReading, ...]
    before: tuple[float, ...]  # predicted / measured of each case under the starting parameters
    after: tuple[float, ...]  # the same under the calibrated parameters
    refused: tuple[str, ...] = ()  # readings that beat the chip's physical limit, and why
    engine: str = DEFAULT_ENGINE  # the serving engine the readings measured: only its predictions move

    def describe(self, model: str) -> str:
        where = ", ".join(sorted({f"{r.gpus}× {r.accelerator_key} {r.precision}" for r in self.readings}))
        worst_before = max(abs(ratio - 1) for ratio in self.before)
        worst_after = max(abs(ratio - 1) for ratio in self.after)
        return (f"calibrated on {len(self.readings)} measured endpoint run(s) of {model} ({where}): the "
                f"serving engine's efficiency rescaled, largest error on those readings "
                f"{100 * worst_before:.0f}% → {100 * worst_after:.0f}%; every accelerator is predicted "
                f"with it under {self.engine}")  # fmt: skip


def reading_of(measurement: Measurement) -> EndpointReading | None:
    """The light-load reading of a stored ``serve-bench --url`` measurement (None: not usable)."""
    details = measurement.utilization or {}
    steps = [s for s in details.get("steps") or () if s.get("ok") and s.get("tpot_ms") and s.get("ttft_ms")]
    key, gpus = measurement.host.accelerator_key, measurement.host.accelerator_count
    if measurement.status != "ok" or not steps or not key or not gpus:
        return None
    lightest = min(steps, key=lambda s: float(s.get("offered_rps") or 0.0))
    tpot, ttft = lightest["tpot_ms"].get("p50"), lightest["ttft_ms"].get("p50")
    if not tpot or not ttft or tpot <= 0 or ttft <= 0:
        return None
    precision = "fp16" if measurement.precision in _UNKNOWN_FORMATS else str(measurement.precision)
    engine = str(details["engine"]) if details.get("engine") else None
    return EndpointReading(str(key), int(gpus), precision, int(details.get("input_tokens") or 1),
                           int(details.get("output_tokens") or 1), float(tpot), float(ttft),
                           engine)  # fmt: skip


def physical_floors_ms(reading: EndpointReading, arch: DecoderArchitecture,
                       chip: Accelerator) -> tuple[float | None, float | None, float]:  # fmt: skip
    """(decode step, prompt) in ms no engine can beat on ``reading``'s chips, and the weight bytes.

    Each output token reads every weight the token uses once (the embedding table only by row):
    bytes / memory bandwidth. The prompt multiplies them by each of its tokens: 2 × params × tokens
    FLOPs at the format's peak tensor rate. None where the chip's figure is unknown.
    """
    fmt = serving_format(reading.precision)
    streamed = arch.active_params
    weight_bytes = streamed * fmt.weight_bytes
    bandwidth = chip.memory_bandwidth_gbps
    decode = weight_bytes / (bandwidth * 1e9 * reading.gpus) * 1e3 if bandwidth and bandwidth > 0 else None
    peak = peak_tflops(chip, fmt)
    prompt = 2 * streamed * reading.input_tokens / (peak * 1e12 * reading.gpus) * 1e3 if peak else None
    return decode, prompt, weight_bytes


def impossible_reason(reading: EndpointReading, arch: DecoderArchitecture, chip: Accelerator) -> str:
    """Why a reading beats the chip's physical limit ('' when it does not), with the limit named."""
    decode, prompt, weight_bytes = physical_floors_ms(reading, arch, chip)
    where = f"{reading.gpus}× {chip.key}" if reading.gpus > 1 else chip.key
    if decode is not None and reading.tpot_ms < PHYSICS_MARGIN * decode:
        return (f"its time per output token, {reading.tpot_ms:.3g} ms, is below the {decode:.3g} ms that "
                f"{where} needs to read {weight_bytes / 1e9:.3g} GB of {reading.precision} weights at "
                f"{chip.memory_bandwidth_gbps:g} GB/s")  # fmt: skip
    if prompt is not None and reading.ttft_ms < PHYSICS_MARGIN * prompt:
        return (
            f"its time to first token, {reading.ttft_ms:.3g} ms, is below the {prompt:.3g} ms that "
            f"{where}'s peak {reading.precision} rate needs for a {reading.input_tokens}-token prompt"
        )
    return ""


def _cases(reading: EndpointReading, arch: DecoderArchitecture) -> list[ServingCase]:
    fmt = serving_format(reading.precision)
    shape = GroupShape(tensor_parallel=reading.gpus)
    # A batch-1 case is predicted at half its output_tokens of context; here the context is the
    # prompt plus half the answer, on average over the answer's tokens.
    context_as_output = 2 * reading.input_tokens + reading.output_tokens
    decode = ServingCase(
        reading.accelerator_key,
        arch.name,
        arch,
        fmt,
        shape,
        "decode-batch-1",
        reading.input_tokens,
        context_as_output,
        1,
        1e3 / reading.tpot_ms,
        "endpoint",
    )
    first = ServingCase(reading.accelerator_key, arch.name, arch, fmt, shape, "ttft", reading.input_tokens, 1,
                        1, reading.ttft_ms, "endpoint")  # fmt: skip
    return [decode, first]


def calibrate(
    readings: Iterable[EndpointReading],
    arch: DecoderArchitecture,
    chips: Mapping[str, Accelerator],
    start: ServingEfficiency,
    engine: str = DEFAULT_ENGINE,
) -> ServingCalibration | None:
    """Parameters of ``engine`` rescaled to the readings (None when none of them can be predicted).

    A reading that beats its chip's physical limit (:func:`impossible_reason`) calibrates nothing:
    it is a mislabelled GPU, a cache or a wrong model name, not an efficient engine.

    Each predicted time is a sum of parts (host, weight and KV streaming, matrix products,
    all-reduces), and a light-load reading cannot tell which part is off. Every part is taken to be
    as likely off as any other by the same factor, so the least change that reproduces the readings
    moves each part in proportion to its share of the measured time: a host-bound step moves mostly
    the host time and barely the bandwidth, so a reading's host jitter does not travel to chips whose
    steps are bandwidth-bound. (Put on the bandwidth alone, the same jitter moved every other GPU.)
    """
    possible = tuple(
        r
        for r in readings
        if r.accelerator_key in chips
        and not unsupported_reason(chips[r.accelerator_key], serving_format(r.precision))
    )
    usable = tuple(r for r in possible if not impossible_reason(r, arch, chips[r.accelerator_key]))
    cases = [case for reading in usable for case in _cases(reading, arch)]
    before = _ratios(cases, chips, start)
    if not usable or len(before) < len(cases):
        return None
    # The decode steps first, the cleaner reading (a time to first token also carries queueing and
    # tokenising): they set the streaming and link parts; the prompts then set the compute part.
    decodes = [case for case in cases if case.kind != "ttft"]
    prompts = [case for case in cases if case.kind == "ttft"]
    stepped = _least_change(decodes, chips, start, ("host", "streaming", "link"), np.zeros(len(PARTS)))
    _host, *chip_parts = _least_change(prompts, chips, start, ("host", "compute"), stepped)
    # The host part is the measured machine's CPU, which another instance type does not share: it
    # absorbs its share of the misfit and is not carried.
    fitted = _scaled(start, (0.0, *chip_parts))
    refused = refused_readings(possible, arch, chips)
    return ServingCalibration(fitted, usable, before, _ratios(cases, chips, fitted), refused, engine)


def refused_readings(
    readings: Iterable[EndpointReading], arch: DecoderArchitecture, chips: Mapping[str, Accelerator]
) -> tuple[str, ...]:
    """One sentence per reading that beats its chip's physical limit (so it calibrates nothing)."""
    found = []
    for reading in readings:
        chip = chips.get(reading.accelerator_key)
        reason = impossible_reason(reading, arch, chip) if chip is not None else ""
        if reason:
            found.append(f"a serve-bench run on {reading.gpus}× {reading.accelerator_key} calibrates "
                         f"nothing: {reason} (beyond the chip's physical limit)")  # fmt: skip
    return tuple(found)


# The parts of a predicted time a calibration may rescale, each by a factor on the time it takes.
PARTS = ("host", "streaming", "compute", "link")
_STEP = 1e-3  # the log-step of the numerical derivatives
_TOLERANCE = 1e-4  # |log(predicted / measured)| at which a reading is reproduced
# No part is rescaled by more than 4x either way: past that the reading is not of this engine.
_LARGEST_LOG_SCALE = math.log(4.0)


def _scaled(eff: ServingEfficiency, log_times: Sequence[float], *, capped: bool = True) -> ServingEfficiency:
    """``eff`` with each part's time multiplied by exp(its entry of ``log_times``, in PARTS order).

    ``capped``: a fraction of a datasheet rate stops at 1 (uncapped while solving, so that every
    part answers smoothly; the parameters predictions take are capped)."""
    host, streaming, compute, link = (math.exp(x) for x in log_times)
    top = 1.0 if capped else math.inf
    return replace(
        eff,
        step_overhead_s=eff.step_overhead_s * host,
        step_overhead_s_per_layer=eff.step_overhead_s_per_layer * host,
        bandwidth=min(top, eff.bandwidth / streaming),
        kv_bandwidth=min(top, eff.kv_bandwidth / streaming),
        weight_only_bandwidth=min(top, eff.weight_only_bandwidth / streaming),
        # The in-flight ceiling scales too: on a chip where it binds, it is what the readings measure.
        bytes_per_sm_cycle=eff.bytes_per_sm_cycle / streaming,
        compute=min(top, eff.compute / compute),
        allreduce_latency_nvlink_s=eff.allreduce_latency_nvlink_s * link,
        allreduce_latency_pcie_s=eff.allreduce_latency_pcie_s * link,
        allreduce_latency_xgmi_s=eff.allreduce_latency_xgmi_s * link,
        allreduce_bandwidth=min(top, eff.allreduce_bandwidth / link),
    )


def _log_time(case: ServingCase, chip: Accelerator, eff: ServingEfficiency) -> float:
    predicted = predict_case(case, chip, eff) or math.nan
    # A decode case is predicted in tokens/s, a prompt in milliseconds.
    return math.log(predicted) if case.kind == "ttft" else -math.log(predicted)


def _least_change(cases: Sequence[ServingCase], chips: Mapping[str, Accelerator], start: ServingEfficiency,
                  moved: Sequence[str], initial: np.ndarray) -> np.ndarray:  # fmt: skip
    """The smallest change to the ``moved`` parts' log scales, from ``initial``, that reproduces the
    cases (least squares where they disagree).

    Gauss-Newton with minimum-norm steps: each step's derivative of a case's log time by a part's
    log scale is that part's share of the case's time, so the pseudo-inverse spreads the misfit over
    the parts by their shares."""
    measured = np.array([math.log(c.measured) if c.kind == "ttft" else -math.log(c.measured) for c in cases])
    scales = np.array(initial, dtype=float)
    if not cases:
        return scales

    def log_times(at: np.ndarray) -> np.ndarray:
        eff = _scaled(start, tuple(at), capped=False)
        return np.array([_log_time(case, chips[case.gpu], eff) for case in cases])

    best, best_misfit = scales, math.inf
    for _ in range(30):
        now = log_times(scales)
        misfit = measured - now
        if not np.all(np.isfinite(misfit)):
            break
        if float(np.max(np.abs(misfit))) < best_misfit:
            best, best_misfit = scales, float(np.max(np.abs(misfit)))
        if best_misfit < _TOLERANCE:
            break
        units = [np.eye(len(PARTS))[PARTS.index(part)] for part in moved]
        shares = np.column_stack([(log_times(scales + _STEP * unit) - now) / _STEP for unit in units])
        # Readings whose shares nearly coincide (two runs on one chip) measure one thing: they are
        # averaged rather than pulling the parts far apart to split a hair.
        step = np.column_stack(units) @ (np.linalg.pinv(shares, rcond=1e-2) @ misfit)
        if not np.any(step):
            break
        scales = np.clip(scales + step, -_LARGEST_LOG_SCALE, _LARGEST_LOG_SCALE)
    return best


def _ratios(cases: Sequence[ServingCase], chips: Mapping[str, Accelerator],
            eff: ServingEfficiency) -> tuple[float, ...]:  # fmt: skip
    predicted = [predict_case(case, chips[case.gpu], eff) for case in cases]
    return tuple(p / case.measured for p, case in zip(predicted, cases, strict=True) if p)
