"""What share of the CUDA-fitted serving model the published ROCm serving figures reach.

    python3 benchmarks/rocm_serving_check.py [benchmarks/published_llm_serving_engines.csv]

The ROCm rows of the published engines file (AMD chips) are predicted with each engine's
parameters fitted on its CUDA rows only, the ROCm row's own source left out of the fit too
(an engine with no CUDA row, TGI, is read against vLLM's fit, which it ships),
at a ROCm share of 1. The share a row implies is modelled / published for a time (TPOT, TTFT) and
published / modelled for a rate. Where the same model also has CUDA rows, the CUDA rows' own
modelled / published ratio is printed beside it and divided out ("relative"), so that what the
model misses for that model on any chip is not booked to ROCm. Prints each row, the geometric mean
per source, and the median error of the ROCm rows at share 1 and at the shipped ``rocm_efficiency``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from llm_serving_engines_accuracy import ALSO_FIXED, PER_STEP, START_HOST_S, STARTS
from perdollar import catalog as catalog_mod
from perdollar.predict.llm_serving.efficiency import ServingEfficiency
from perdollar.predict.llm_serving.engine_cases import load_published_rows, with_host_step
from perdollar.predict.llm_serving.engines import FIT_STARTS
from perdollar.predict.llm_serving.published import TIME_KINDS, ServingCase, fit_engine, predict_case
from perdollar.predict.params import shipped_model

DEFAULT_CSV = Path(__file__).with_name("published_llm_serving_engines.csv")


def implied_share(case: ServingCase, chip: catalog_mod.Accelerator, eff: ServingEfficiency) -> float | None:
    """modelled / published for a time, published / modelled for a rate: the share of the CUDA
    model's speed that the published figure reached (None where the model cannot run the case)."""
    # At a share of 1: the chip as if its stack reached what CUDA reaches (the serving model itself
    # applies rocm_efficiency to ROCm chips).
    predicted = predict_case(case, dataclasses.replace(chip, software_stack="cuda"), eff)
    if not predicted:
        return None
    return predicted / case.measured if case.kind in TIME_KINDS else case.measured / predicted


def _error_at(case: ServingCase, share: float, assumed: float) -> float:
    """|predicted / published - 1| of a row that reached ``share`` when the model assumes ``assumed``
    (a time is the share-1 time over the assumed share, a rate the share-1 rate times it)."""
    return abs(share / assumed - 1.0) if case.kind in TIME_KINDS else abs(assumed / share - 1.0)


def _geomean(values: list[float]) -> float:
    return math.exp(statistics.fmean(math.log(v) for v in values))


def _cuda_fit(
    cases: list[ServingCase], chips: dict[str, catalog_mod.Accelerator], engine: str
) -> ServingEfficiency:
    start = with_host_step(STARTS.get(engine, FIT_STARTS["gpu"]), START_HOST_S.get(engine, 1e-3))
    return fit_engine(cases, chips, start, fixed=PER_STEP | ALSO_FIXED.get(engine, frozenset()))


@dataclass(frozen=True)
class RocmRow:
    case: ServingCase
    share: float  # of the CUDA fit's speed, at a ROCm share of 1
    cuda_ratio: float | None  # the same model's CUDA rows: modelled / published speed (geometric mean)
    cuda_rows: int


def rocm_rows(cases: list[ServingCase], chips: dict[str, catalog_mod.Accelerator]) -> list[RocmRow]:
    """Every ROCm row with the share it implies against its engine's fit on CUDA rows only, the
    row's own source left out of that fit (a source that ran both chips would otherwise lend its
    CUDA rows to the very comparison it is read against)."""
    rocm = [case for case in cases if chips[case.gpu].software_stack == "rocm"]
    out = []
    for engine, source in sorted({(case.engine, case.source) for case in rocm}):
        fitted_as = engine if _cuda_rows(cases, chips, engine) else "vllm"  # TGI ships vLLM's fit
        cuda = _cuda_rows(cases, chips, fitted_as)
        eff = _cuda_fit([c for c in cuda if c.source != source], chips, fitted_as)
        for case in (c for c in rocm if c.engine == engine and c.source == source):
            share = implied_share(case, chips[case.gpu], eff)
            if share is None:
                continue
            same = [implied_share(c, chips[c.gpu], eff) for c in cuda if c.model == case.model]
            ratios = [ratio for ratio in same if ratio]
            out.append(RocmRow(case, share, _geomean(ratios) if ratios else None, len(ratios)))
    return out


def _cuda_rows(
    cases: list[ServingCase], chips: dict[str, catalog_mod.Accelerator], engine: str
) -> list[ServingCase]:
    return [c for c in cases if c.engine == engine and chips[c.gpu].software_stack == "cuda"]


def _print_row(row: RocmRow) -> None:
    case = row.case
    cuda = f"{row.cuda_ratio:.2f} ({row.cuda_rows} rows)" if row.cuda_ratio else "-"
    relative = f"{row.share / row.cuda_ratio:.2f}" if row.cuda_ratio else "-"
    print(
        f"{case.gpu:<8} {case.engine:<7} {case.model:<14} {case.shape.tensor_parallel:>3} "
        f"{case.batch or 1:>5} {case.kind:<5} {case.measured:9.2f} {row.share:6.2f} {cuda:>16} {relative:>9}"
    )


def _print_summary(rows: list[RocmRow], shipped_share: float) -> None:
    by_source: dict[str, list[RocmRow]] = defaultdict(list)
    for row in rows:
        by_source[row.case.source].append(row)
    print("\nimplied ROCm share, geometric mean per source (the CUDA fit never saw a ROCm source)")
    for source, group in sorted(by_source.items()):
        line = f"  {source}: {len(group)} rows, share {_geomean([r.share for r in group]):.2f}"
        relative = [r.share / r.cuda_ratio for r in group if r.cuda_ratio]
        if relative:
            line += f", relative to the same model on CUDA {_geomean(relative):.2f}"
        print(line)
    per_source = [_geomean([r.share for r in group]) for group in by_source.values()]
    at_one = [_error_at(r.case, r.share, 1.0) for r in rows]
    at_shipped = [_error_at(r.case, r.share, shipped_share) for r in rows]
    print(f"median over sources: share {statistics.median(per_source):.2f}")
    print(
        f"median |predicted/published - 1| of the {len(rows)} ROCm rows: "
        f"{100 * statistics.median(at_one):.1f}% at share 1 (the CUDA figures), "
        f"{100 * statistics.median(at_shipped):.1f}% at the shipped rocm_efficiency {shipped_share:.2f} "
        "(the serving model as shipped)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    args = parser.parse_args(argv)
    catalog = catalog_mod.load()
    cases = load_published_rows(args.csv, catalog)
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cases}}
    rows = rocm_rows(cases, chips)
    if not rows:
        print("no ROCm row in", args.csv)
        return
    print(
        f"{'GPU':<8} {'engine':<7} {'model':<14} {'TP':>3} {'conc':>5} {'kind':<5} {'published':>9} "
        f"{'share':>6} {'CUDA same model':>16} {'relative':>9}"
    )
    for row in rows:
        _print_row(row)
    _print_summary(rows, shipped_model().params.rocm_efficiency)


if __name__ == "__main__":
    main()
