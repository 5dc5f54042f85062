"""How close the serving model comes to each engine's figures, each source held out of its own fit.

    python3 benchmarks/llm_serving_engines_accuracy.py SHARED_DATA_DIR

Cases: the development set's TensorRT-LLM tables (one source per documentation version), the
published figures of other engines on CUDA chips in benchmarks/published_llm_serving_engines.csv
(its ROCm rows are read by benchmarks/rocm_serving_check.py), and
perdollar's own transformers step timings (benchmarks/gpu_llm_serving_steps_{h200,h100}.csv,
the hf engine, one source per GPU). For every engine and source the engine's few parameters are
fitted on its other sources and the held-out source is predicted (leave one source out).

"before": the model as it was: every engine predicted with TensorRT-LLM's parameters and its
per-layer overhead (TensorRT-LLM itself refitted without the source, per-layer overhead free).
"after": the engine's own parameters with a per-step host time (independent of depth) in place
of the per-layer overhead; an engine with dense and mixture-of-experts rows fits its shared
parameters on the dense rows and then its MoE parameters on the MoE rows (``fit_engine``).
"roofline": datasheet peaks, no efficiency, no overhead.
"shipped": the parameters in engines.py (fitted on every row: in sample). Errors are
|predicted / published − 1|; medians per engine, metric and GPU.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from perdollar import catalog as catalog_mod
from perdollar.catalog.model import Accelerator
from perdollar.predict.llm_serving.efficiency import DEFAULT_EFFICIENCY, FIT_START
from perdollar.predict.llm_serving.engine_cases import (
    leave_one_source_out,
    load_hf_steps,
    load_published_rows,
    with_host_step,
)
from perdollar.predict.llm_serving.engines import ENGINES, FIT_STARTS
from perdollar.predict.llm_serving.published import (
    PLAIN_ROOFLINE,
    TIME_KINDS,
    ServingCase,
    errors,
    fit_engine,
    load_cases,
    predict_case,
)
from perdollar.predict.llm_serving.timing import ServingEfficiency

HERE = Path(__file__).resolve().parent
PER_LAYER = frozenset({"step_overhead_s"})  # the old physics: overhead per layer only
PER_STEP = frozenset({"step_overhead_s_per_layer"})  # the new: host time per step only
# TensorRT-LLM's tables hold no batch-1 decode row, so nothing pins its weight-streaming fraction
# (a free fit drifts to the grid's floor, trading it against the host time): it keeps the
# starting value in engines.py, near what the batch-1 rows of vLLM and transformers show.
# vLLM's rows are decode steps at short contexts: its KV-cache fraction keeps its start too.
# transformers' rows come from two chips of nearly the same bandwidth-to-host ratio, so its
# weight-streaming fraction and host time trade off freely: the fraction is vLLM's (the same
# cuBLAS kernels read the weights) and the host time is fitted.
ALSO_FIXED = {
    "tensorrt-llm": frozenset({"bandwidth"}),
    "vllm": frozenset({"kv_bandwidth"}),
    "hf": frozenset({"bandwidth"}),
}
# Where each engine's fit starts (sglang and tgi have no fit of their own: they ship vLLM's).
STARTS = {"tensorrt-llm": FIT_STARTS["tensorrt-llm"], "hf": replace(FIT_STARTS["gpu"], bandwidth=0.825)}
START_HOST_S = {"hf": 10e-3}


def _cases(data_dir: Path) -> list[ServingCase]:
    catalog = catalog_mod.load()
    dev, _ = load_cases(data_dir / "measurements" / "published_dev.csv", catalog)
    trt = [case for case in dev if case.engine == "tensorrt-llm"]
    published = load_published_rows(HERE / "published_llm_serving_engines.csv", catalog)
    # ROCm rows carry the ROCm share on top of the engine's kernels: they would drag the CUDA fit.
    # benchmarks/rocm_serving_check.py reads them against that fit instead.
    published = [case for case in published if catalog.accelerator(case.gpu).software_stack != "rocm"]
    steps = load_hf_steps(sorted(HERE.glob("gpu_llm_serving_steps_*.csv")), catalog)
    return trt + published + steps


def _medians(pairs: list[tuple[ServingCase, float]]) -> dict[tuple[str, str, str], list[float]]:
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for case, error in pairs:
        out[(case.engine, case.kind, case.gpu)].append(error)
        out[(case.engine, case.kind, "all")].append(error)
        out[(case.engine, "all", "all")].append(error)
    return out


def _ratio(case: ServingCase, chips: Mapping[str, Accelerator], eff: ServingEfficiency) -> float | None:
    """predicted / published time (a rate is inverted): above 1 the model is too slow."""
    predicted = predict_case(case, chips[case.gpu], eff)
    if not predicted:
        return None
    return predicted / case.measured if case.kind in TIME_KINDS else case.measured / predicted


def _print_by_source(
    after: list[tuple[ServingCase, float]],
    shipped_ratios: list[tuple[ServingCase, float]],
    roofline: list[tuple[ServingCase, float]],
) -> None:
    """One line per (engine, source): what is left on each source, and in which direction."""
    held: dict[tuple[str, str], list[float]] = defaultdict(list)
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    plain: dict[tuple[str, str], list[float]] = defaultdict(list)
    for case, error in after:
        held[(case.engine, case.source)].append(error)
    for case, ratio in shipped_ratios:
        ratios[(case.engine, case.source)].append(ratio)
    for case, error in roofline:
        plain[(case.engine, case.source)].append(error)
    print("\nby source: median |error| held out, shipped time ratio (predicted / published; < 1 too fast)")
    for key in sorted(held):
        engine, source = key
        shipped = ratios.get(key) or [float("nan")]
        print(
            f"{engine:<13} {source[:60]:<60} {len(held[key]):>4} held out "
            f"{100 * statistics.median(held[key]):6.1f}%  shipped {statistics.median(shipped):5.2f}x "
            f"({min(shipped):.2f}-{max(shipped):.2f})  roofline {100 * statistics.median(plain[key]):6.1f}%"
        )


def _moe_fit(eff: ServingEfficiency) -> str:
    shares = {"16-bit/fp8 experts": eff.expert_bandwidth, "4-bit experts": eff.expert_weight_only_bandwidth}
    shown = "  ".join(f"{name} {'dense share' if v is None else f'{v:.2f}'}" for name, v in shares.items())
    return f"  MoE floor {1e6 * eff.moe_floor_s:.0f} µs/layer  {shown}"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="the shared data folder (measurements/published_dev.csv)")
    args = parser.parse_args()
    started = time.perf_counter()
    cases = _cases(args.data_dir)
    catalog = catalog_mod.load()
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cases}}
    before, after, shipped_errors, roofline = [], [], [], []
    shipped_ratios: list[tuple[ServingCase, float]] = []
    for engine in sorted({case.engine for case in cases}):
        rows = [case for case in cases if case.engine == engine]
        if engine == "tensorrt-llm":
            before += leave_one_source_out(rows, chips, FIT_START, PER_LAYER)
        else:
            before += [(case, e) for case in rows for e in errors([case], chips, DEFAULT_EFFICIENCY)]
        if engine == "sglang":  # its fit starts from the vLLM fit it ships (a lone source is predicted by it)
            start = ENGINES[engine].step_efficiency()
        else:
            start = with_host_step(STARTS.get(engine, FIT_STARTS["gpu"]), START_HOST_S.get(engine, 1e-3))
        fixed = PER_STEP | ALSO_FIXED.get(engine, frozenset())
        after += leave_one_source_out(rows, chips, start, fixed)
        roofline += [(case, e) for case in rows for e in errors([case], chips, PLAIN_ROOFLINE)]
        in_sample = ENGINES[engine].step_efficiency()
        shipped_errors += [(case, e) for case in rows for e in errors([case], chips, in_sample)]
        shipped_ratios += [(case, r) for case in rows if (r := _ratio(case, chips, in_sample)) is not None]
        shipped = fit_engine(rows, chips, start, fixed=fixed)
        print(
            f"{engine:<13} fitted on all {len(rows)} rows ({len({c.source for c in rows})} sources): "
            f"bandwidth {shipped.bandwidth:.3f}  weight-only {shipped.weight_only_bandwidth:.3f}  "
            f"compute {shipped.compute:.3f}  KV {shipped.kv_bandwidth:.2f}  "
            f"host {1e3 * shipped.step_overhead_s:.2f} ms/step  all-reduce {shipped.allreduce_bandwidth:.2f}"
            + (_moe_fit(shipped) if any(case.arch.is_moe for case in rows) else "")
        )
    b, a, r = _medians(before), _medians(after), _medians(roofline)
    s = _medians(shipped_errors)
    print("\nmedian |predicted/published - 1|, leave one source out")
    print(
        f"{'engine':<13} {'metric':<15} {'GPU':<16} {'n':>4} {'before':>8} {'after':>8} {'shipped':>8} "
        f"{'roofline':>9}"
    )
    for key in sorted(a):
        engine, kind, gpu = key
        print(
            f"{engine:<13} {kind:<15} {gpu:<16} {len(a[key]):>4} "
            f"{100 * statistics.median(b[key]):7.1f}% {100 * statistics.median(a[key]):7.1f}% "
            f"{100 * statistics.median(s[key]):7.1f}% "
            f"{100 * statistics.median(r[key]):8.1f}%"
        )
    _print_by_source(after, shipped_ratios, roofline)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
