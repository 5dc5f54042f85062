"""Mixture-of-experts and dense serving figures against the model, each source held out of its
engine's fit; optionally beside the model of an earlier revision.

    python3 benchmarks/llm_serving_moe_accuracy.py SHARED_DATA_DIR [--before REV] [--engines vllm,sglang]

Cases: those of benchmarks/llm_serving_engines_accuracy.py (the development set's TensorRT-LLM
tables, the CUDA rows of benchmarks/published_llm_serving_engines.csv, perdollar's own transformers
steps), plus that file's ROCm rows, which no fit sees: they are predicted with their engine's fit
on all its CUDA rows, as the shipped model predicts them.

Each engine is fitted as its record in engines.py is: the shared parameters on its dense models'
rows (those the shipped record pins), then the mixture-of-experts parameters alone on its MoE rows
(``fit_engine``); an engine that ships another engine's parameters (SGLang and TGI ship vLLM's) is
predicted with that engine's fit on all its rows. For every source of an engine the fit leaves
that source out. Errors are |predicted / published - 1|; medians per engine and kind (MoE or
dense) and per source.

--before REV runs the same in a fresh interpreter on the ``src/`` of git revision REV (extracted to
a temporary folder), whose model has no MoE parameters (its MoE rows are predicted by the dense
fit, as that revision's shipped record predicted them), and prints both.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from io import BytesIO
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# The engines whose records ship another engine's parameters (engines.py says why).
SHIPS_FIT_OF = {"sglang": "vllm", "tgi": "vllm"}
# vLLM's record pins only its weight-streaming fraction and host time on its dense rows (engines.py):
# the rest keep their start. The other engines free what llm_serving_engines_accuracy.py frees.
SHARED_FREE = {"vllm": frozenset({"bandwidth", "step_overhead_s"})}


def _fit(cases: list[Any], chips: dict[str, Any], start: Any, fixed: frozenset[str]) -> Any:
    """The staged fit of ``fit_engine``, written here so that a revision without it is fitted alike."""
    from perdollar.predict.llm_serving import published

    moe_parameters = getattr(published, "MOE_PARAMETERS", frozenset())
    dense = [case for case in cases if not case.arch.is_moe]
    moe = [case for case in cases if case.arch.is_moe]
    if not dense:
        return published.fit_efficiency(cases, chips, start, fixed=fixed)
    shared = published.fit_efficiency(dense, chips, start, fixed=fixed | moe_parameters)
    if not moe or not moe_parameters:
        return shared
    rest = frozenset(published._GRIDS) - moe_parameters
    return published.fit_efficiency(moe, chips, shared, fixed=fixed | rest)


def held_out_errors(data_dir: Path, engines: set[str] | None) -> dict[str, Any]:
    """Every case's held-out error, with its engine, source, kind and stack; and each engine's fit."""
    from llm_serving_engines_accuracy import ALSO_FIXED, PER_STEP, START_HOST_S, STARTS, _cases
    from perdollar import catalog as catalog_mod
    from perdollar.predict.llm_serving.engine_cases import load_published_rows, with_host_step
    from perdollar.predict.llm_serving.engines import FIT_STARTS
    from perdollar.predict.llm_serving.published import _GRIDS, errors

    catalog = catalog_mod.load()
    cuda = _cases(data_dir)
    published_rows = load_published_rows(HERE / "published_llm_serving_engines.csv", catalog)
    rocm = [case for case in published_rows if catalog.accelerator(case.gpu).software_stack == "rocm"]
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cuda + rocm}}
    wanted = engines or {case.engine for case in cuda + rocm}
    fitted_on = sorted({SHIPS_FIT_OF.get(engine, engine) for engine in wanted})
    out: list[dict[str, Any]] = []
    full: dict[str, Any] = {}
    for engine in fitted_on:
        rows = [case for case in cuda if case.engine == engine]
        start = with_host_step(STARTS.get(engine, FIT_STARTS["gpu"]), START_HOST_S.get(engine, 1e-3))
        fixed = PER_STEP | ALSO_FIXED.get(engine, frozenset())
        if engine in SHARED_FREE:
            moe_parameters = frozenset(_GRIDS) & {
                "moe_floor_s",
                "expert_bandwidth",
                "expert_weight_only_bandwidth",
            }
            fixed = frozenset(_GRIDS) - SHARED_FREE[engine] - moe_parameters
        full[engine] = _fit(rows, chips, start, fixed)
        if engine not in wanted:
            continue
        for source in sorted({case.source for case in rows}):
            fitted = _fit([case for case in rows if case.source != source], chips, start, fixed)
            for case in rows:
                if case.source == source:
                    out += [_row(case, error, "CUDA") for error in errors([case], chips, fitted)]
    for case in cuda + rocm:
        engine = SHIPS_FIT_OF.get(case.engine)
        on_rocm = case in rocm
        if case.engine not in wanted or not (engine or on_rocm):
            continue
        # Out of sample: an engine that ships another's fit, or a ROCm row no fit sees.
        eff = full[engine or case.engine]
        out += [_row(case, error, "ROCm" if on_rocm else "CUDA") for error in errors([case], chips, eff)]
    moe_fields = ("moe_floor_s", "expert_bandwidth", "expert_weight_only_bandwidth")
    fits = {engine: {name: getattr(eff, name, None) for name in ("bandwidth", "step_overhead_s", *moe_fields)}
            for engine, eff in full.items()}  # fmt: skip
    return {"rows": out, "fits": fits}


def _row(case: Any, error: float, stack: str) -> dict[str, Any]:
    return {"engine": case.engine, "source": case.source, "moe": case.arch.is_moe, "stack": stack,
            "model": case.model, "error": error}  # fmt: skip


def _at_revision(revision: str, data_dir: Path, engines: set[str] | None) -> dict[str, Any]:
    """``held_out_errors`` run on the ``src/`` of ``revision`` in a fresh interpreter, this script
    placed in that revision's ``benchmarks/`` (whose cases and fit settings it then reads)."""
    archive = subprocess.run(
        ["git", "archive", revision, "src", "benchmarks"], cwd=HERE.parent, capture_output=True, check=True
    )
    with tempfile.TemporaryDirectory(prefix="perdollar-before-") as folder:
        with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        script = Path(folder) / "benchmarks" / Path(__file__).name
        shutil.copyfile(__file__, script)
        env = {**os.environ, "PYTHONPATH": str(Path(folder) / "src")}
        command = [sys.executable, str(script), str(data_dir), "--emit-json"]
        if engines:
            command += ["--engines", ",".join(sorted(engines))]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def _medians(rows: list[dict[str, Any]], key: Any) -> dict[Any, list[float]]:
    grouped: dict[Any, list[float]] = defaultdict(list)
    for row in rows:
        grouped[key(row)].append(row["error"])
    return grouped


def _cell(values: list[float] | None) -> str:
    return f"{100 * statistics.median(values):7.1f}%" if values else "       -"


def _print(after: dict[str, Any], before: dict[str, Any] | None) -> None:
    kind = {True: "MoE", False: "dense"}
    now = after["rows"]
    then = before["rows"] if before else []
    by_engine = lambda r: (r["engine"], r["stack"], kind[r["moe"]])  # noqa: E731
    by_source = lambda r: (r["engine"], r["stack"], kind[r["moe"]], r["source"])  # noqa: E731
    for title, key in (("engine", by_engine), ("source", by_source)):
        a, b = _medians(now, key), _medians(then, key)
        print(f"\nmedian |predicted/published - 1| by {title}, each source held out of its engine's fit")
        print(f"{'engine':<13} {'stack':<5} {'kind':<6} {'n':>4} {'before':>8} {'after':>8}  "
              + ("source" if title == "source" else ""))  # fmt: skip
        for group in sorted(a):
            label = f"{group[3][:72]}" if title == "source" else ""
            print(f"{group[0]:<13} {group[1]:<5} {group[2]:<6} {len(a[group]):>4} {_cell(b.get(group))} "
                  f"{_cell(a[group])}  {label}")  # fmt: skip
    for name, rows in (("MoE", [r for r in now if r["moe"]]), ("dense", [r for r in now if not r["moe"]])):
        earlier = [r for r in then if r["moe"] == (name == "MoE")]
        print(f"all {name} rows: n={len(rows)}, before {_cell([r['error'] for r in earlier])}, "
              f"after {_cell([r['error'] for r in rows])}")  # fmt: skip
    print("\nfitted on every CUDA row of the engine (after):")
    for engine, values in after["fits"].items():
        shown = ", ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in values.items())
        print(f"  {engine}: {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="the shared data folder (measurements/published_dev.csv)")
    parser.add_argument("--before", metavar="REV", help="also the model at this git revision")
    parser.add_argument("--engines", help="comma-separated engines (default: all)")
    parser.add_argument("--emit-json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    engines = set(args.engines.split(",")) if args.engines else None
    if args.emit_json:
        print(json.dumps(held_out_errors(args.data_dir, engines)))
        return
    started = time.perf_counter()
    before = _at_revision(args.before, args.data_dir, engines) if args.before else None
    after = held_out_errors(args.data_dir, engines)
    _print(after, before)
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
