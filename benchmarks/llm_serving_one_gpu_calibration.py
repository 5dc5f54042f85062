"""How far one measured GPU carries an engine's serving prediction to the other GPUs.

    python3 benchmarks/llm_serving_one_gpu_calibration.py [--step-context 1024]

For each engine and each source that published the engine's figures on one GPU, that source's
lightest-load figures on that GPU become the user's ``serve-bench --url … --engine NAME`` run: a
stored inference measurement, read and calibrated by the code ``recommend --inference`` runs on a
stored run (``endpoint_calibration``). The engine's figures on every *other* GPU are then predicted
with the engine's shipped parameters ("before") and with the calibrated ones ("after"); the error
is |predicted / published − 1|, medians per engine and per metric. A user's run measures their own
model, so by default only the rows of the measured model are predicted (``--any-model``: every
model the engine has rows for, which asks one model's reading to carry another's architecture).

Cases: benchmarks/published_llm_serving_engines.csv (vLLM, SGLang) and perdollar's own
transformers step timings (benchmarks/gpu_llm_serving_steps_{h100,h200}.csv, the hf engine).
A published row that gives a time per output token but no time to first token makes a reading
whose time to first token is the shipped prediction: the prompt then only takes back what the
decode step's change did to it, and the row calibrates the decode side (what it measured).
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.ask.llm_serving import endpoint_calibration
from perdollar.catalog.catalog import Catalog
from perdollar.measure.result import HostFingerprint, Measurement
from perdollar.predict.llm_serving.engine_cases import load_hf_steps, load_published_rows
from perdollar.predict.llm_serving.engines import serving_engine
from perdollar.predict.llm_serving.published import ServingCase, errors, predict_case

HERE = Path(__file__).resolve().parent
# The context of the transformers step a user's run is taken to read: the one nearest a
# 1000-token prompt, as serve-bench sends by default.
STEP_CONTEXT = 1024


def _cases(catalog: Catalog) -> list[ServingCase]:
    published = load_published_rows(HERE / "published_llm_serving_engines.csv", catalog)
    steps = load_hf_steps(sorted(HERE.glob("gpu_llm_serving_steps_*.csv")), catalog)
    return published + steps


def _measurement(case: ServingCase, tpot_ms: float, ttft_ms: float, input_tokens: int,
                 output_tokens: int) -> Measurement:  # fmt: skip
    """The figures as ``serve-bench --url`` stores a run: one offered load, its medians."""
    host = HostFingerprint("published", 0, 0.0, case.gpu, case.gpu, case.shape.gpus, None, "unknown", None)
    step = {"ok": True, "offered_rps": 0.1, "tpot_ms": {"p50": tpot_ms}, "ttft_ms": {"p50": ttft_ms}}
    details = {"steps": [step], "engine": case.engine, "input_tokens": input_tokens,
               "output_tokens": output_tokens}  # fmt: skip
    return Measurement("ok", "inference", case.model, "", 1, case.fmt.name, host, "", utilization=details)


def _shipped_ttft_ms(case: ServingCase, input_tokens: int, catalog: Catalog) -> float:
    prompt = replace(case, kind="ttft", input_tokens=input_tokens, output_tokens=1, batch=1)
    shipped = serving_engine(case.engine).step_efficiency()
    return predict_case(prompt, catalog.accelerators[case.gpu], shipped) or 1.0


def _readings(held: Sequence[ServingCase], catalog: Catalog, step_context: int) -> list[Measurement]:
    """The user's run made of one source's figures on one GPU (empty: nothing at light load)."""
    tpots = sorted((c for c in held if c.kind == "tpot"), key=lambda c: c.batch or 1)
    if tpots and (tpots[0].batch or 1) == 1:
        case = tpots[0]
        prompt = max(case.input_tokens, 1)
        ttft = _shipped_ttft_ms(case, prompt, catalog)
        return [_measurement(case, case.measured, ttft, prompt, max(case.output_tokens, 1))]
    decodes = {c.input_tokens: c for c in held if c.kind == "decode-step" and c.batch == 1}
    prefills = {c.input_tokens: c for c in held if c.kind == "prefill" and c.batch == 1}
    common = sorted(set(decodes) & set(prefills), key=lambda n: abs(n - step_context))
    if not common:
        return []
    context = common[0]
    decode, prefill = decodes[context], prefills[context]
    # One decode step at the prompt's context is the reading's time per output token (one token out).
    return [_measurement(decode, 1e3 / decode.measured, context / prefill.measured * 1e3, context, 1)]


def _median(values: Sequence[float]) -> str:
    return f"{100 * statistics.median(values):5.1f}%" if values else "    —"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-context", type=int, default=STEP_CONTEXT,
                        help="the transformers step context a run reads (nearest found)")  # fmt: skip
    parser.add_argument("--any-model", action="store_true",
                        help="also predict the engine's rows of other models (by default only "
                             "the measured model's rows on other GPUs)")  # fmt: skip
    args = parser.parse_args()
    step_context, any_model = args.step_context, args.any_model
    catalog = catalog_mod.load()
    cases = _cases(catalog)
    chips = dict(catalog.accelerators)
    found: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    print("engine        measured on (source)                                   held-out  before   after")
    for engine in sorted({c.engine for c in cases}):
        mine = [c for c in cases if c.engine == engine]
        for gpu, source in sorted({(c.gpu, c.source) for c in mine}):
            measured = [c for c in mine if c.gpu == gpu and c.source == source]
            models = {c.model for c in measured}
            others = [c for c in mine if c.gpu != gpu and (any_model or c.model in models)]
            runs = _readings(measured, catalog, step_context)
            if not others or not runs:
                continue
            arch = next(c.arch for c in mine if c.gpu == gpu and c.source == source)
            calibration, _ = endpoint_calibration(runs, arch, catalog, engine)
            if calibration is None:
                continue
            shipped = serving_engine(engine).step_efficiency()
            before, after = errors(others, chips, shipped), errors(others, chips, calibration.efficiency)
            for case in others:
                for label, eff in (("before", shipped), ("after", calibration.efficiency)):
                    found[(engine, case.kind)][label] += errors([case], chips, eff)
                    found[(engine, "all")][label] += errors([case], chips, eff)
            where = f"{gpu} ({source.split('//')[-1][:38]})"
            print(f"{engine:13} {where:55} {len(others):8} {_median(before)} {_median(after)}")
    print("\nmedian error on the engine's rows on the other GPUs, per engine and metric")
    print("engine        metric              cases  before   after")
    for (engine, kind), pair in sorted(found.items()):
        before, after = pair["before"], pair["after"]
        print(f"{engine:13} {kind:18} {len(before):6} {_median(before)} {_median(after)}")


if __name__ == "__main__":
    main()
