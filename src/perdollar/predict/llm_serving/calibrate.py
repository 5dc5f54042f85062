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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from perdollar.catalog.model import Accelerator
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
class Calibration:
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


def reading_of(measurement: Any) -> EndpointReading | None:
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
    streamed = max(arch.active_params - arch.embedding_params, 0)
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
) -> Calibration | None:
    """Parameters of ``engine`` rescaled to the readings (None when none of them can be predicted).

    A reading that beats its chip's physical limit (:func:`impossible_reason`) calibrates nothing:
    it is a mislabelled GPU, a cache or a wrong model name, not an efficient engine.

    Two factors, each solved for exactly: one on every bandwidth fraction (weights, KV cache,
    weight-only kernels) from the decode steps, one on the compute fraction from the prompts. Few
    readings cannot pin more parameters than that; the per-layer overhead keeps its shipped value.
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
    memory = _geometric_mean([_solve(case, chips, start, _memory_scaled) for case in cases
                              if case.kind == "decode-batch-1"])  # fmt: skip
    rescaled = _memory_scaled(start, memory)  # the prompt's time also reads the weights
    compute = _geometric_mean([_solve(case, chips, rescaled, _compute_scaled) for case in cases
                               if case.kind == "ttft"])  # fmt: skip
    fitted = _compute_scaled(rescaled, compute)
    refused = refused_readings(possible, arch, chips)
    return Calibration(fitted, usable, before, _ratios(cases, chips, fitted), refused, engine)


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


def _memory_scaled(eff: ServingEfficiency, factor: float) -> ServingEfficiency:
    # The in-flight ceiling scales too: on a chip where it binds, it is what the readings measure.
    return replace(eff, bandwidth=min(1.0, eff.bandwidth * factor),
                   kv_bandwidth=min(1.0, eff.kv_bandwidth * factor),
                   weight_only_bandwidth=min(1.0, eff.weight_only_bandwidth * factor),
                   bytes_per_sm_cycle=eff.bytes_per_sm_cycle * factor)  # fmt: skip


def _compute_scaled(eff: ServingEfficiency, factor: float) -> ServingEfficiency:
    return replace(eff, compute=min(1.0, eff.compute * factor))


def _solve(case: ServingCase, chips: Mapping[str, Accelerator], start: ServingEfficiency,
           scaled: Callable[[ServingEfficiency, float], ServingEfficiency]) -> float:  # fmt: skip
    """The factor at which the case is predicted as measured (bisection: the figure is monotone)."""
    low, high = 0.02, 4.0

    def error(factor: float) -> float:
        predicted = predict_case(case, chips[case.gpu], scaled(start, factor)) or 0.0
        # Tokens/s grow with the factor, milliseconds shrink: compare so that both rise.
        return predicted / case.measured - 1 if case.kind != "ttft" else 1 - predicted / case.measured

    for _ in range(40):
        middle = math.sqrt(low * high)
        if error(middle) < 0:
            low = middle
        else:
            high = middle
    return math.sqrt(low * high)


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else 1.0


def _ratios(cases: Sequence[ServingCase], chips: Mapping[str, Accelerator],
            eff: ServingEfficiency) -> tuple[float, ...]:  # fmt: skip
    predicted = [predict_case(case, chips[case.gpu], eff) for case in cases]
    return tuple(p / case.measured for p, case in zip(predicted, cases, strict=True) if p)
