"""The serving predictions' 80% bands from their held-out errors, and how often they hold.

    python3 benchmarks/llm_serving_bands.py SHARED_DATA_DIR [--write]

Every published serving figure perdollar is checked on is predicted with parameters fitted
without its source (leave one source out, as benchmarks/llm_serving_moe_accuracy.py fits each
engine; llama.cpp's rows, one table, leave their GPU out as benchmarks/llm_serving_accuracy.py
does; the non-GPU stacks' decode rows leave their source out as benchmarks/nongpu_llm_accuracy.py
does). Each row's log(predicted / published), in the unit of the figure it stands for, goes to
one of three figures: throughput (loaded output tokens/s), TTFT (prefill and first-token rows)
and TPOT (decode at small batches, a request's time per output token). Rows are grouped by
figure, dense or mixture-of-experts, software stack, engine and chip architecture; a group's
band is its median error plus the 5th to 95th percentile of its rows' errors each set against the
group's other sources (and other engines or architectures), never narrower than the rows' own
5th to 95th percentile (perdollar.predict.llm_serving.bands says why).

--write stores the table the predictor reads (src/perdollar/predict/data/serving_bands.json).

Coverage: the share of rows whose published figure lies inside the band around its held-out
prediction, per group, for the fixed band the predictor had before (±24% on throughput, none on
TTFT and TPOT) and for the new bands. "new, own source out" recomputes each row's band without
its own source's rows, so that no row sits inside a band its own error widened.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from perdollar import catalog as catalog_mod  # noqa: E402
from perdollar.predict.llm_serving.bands import (  # noqa: E402
    BANDS_PATH,
    LEVEL,
    MIN_ROWS,
    FigureRow,
    band_for,
    band_table,
)

# The figure each kind of published row stands for, and whether the row's number is a rate
# (tokens/s, inverted when the figure is a time) or a time.
FIGURE_OF_KIND = {
    "max-throughput": "throughput", "static-batch": "throughput", "decode-step": "throughput",
    "ttft": "ttft", "prefill": "ttft", "tpot": "tpot", "decode-batch-1": "tpot",
}  # fmt: skip
TIME_FIGURES = frozenset({"ttft", "tpot"})
OLD_THROUGHPUT_BAND = (0.76, 1.24)  # the fixed band on every throughput before


@dataclass(frozen=True, slots=True)
class HeldOutRow:
    figure: FigureRow
    source: str
    log_error: float  # log(predicted / published) of the figure
    build: str = ""  # the engine version the source ran ('' where it does not say)
    build_date: str = ""  # when the source published it (a year at least; '' where undated)

    @property
    def speed(self) -> float:
        """How fast the source ran against the prediction (above 1: faster than predicted)."""
        time_figure = self.figure.figure in TIME_FIGURES
        return math.exp(self.log_error if time_figure else -self.log_error)


def _log_error(case: Any, predicted: float, figure: str) -> float:
    """log(predicted / published) of ``figure``: a rate row standing for a time is inverted."""
    from perdollar.predict.llm_serving.published import TIME_KINDS

    ratio = predicted / case.measured
    row_is_time = case.kind in TIME_KINDS
    return math.log(ratio if row_is_time == (figure in TIME_FIGURES) else 1.0 / ratio)


def _gpu_rows(data_dir: Path) -> list[HeldOutRow]:
    """The GPU engines' rows, each predicted by a fit without its source (its GPU for llama.cpp)."""
    from llm_serving_engines_accuracy import ALSO_FIXED, PER_STEP, START_HOST_S, STARTS, _cases
    from llm_serving_moe_accuracy import SHARED_FREE, SHIPS_FIT_OF, _fit
    from perdollar.predict.llm_serving.efficiency import fit_start
    from perdollar.predict.llm_serving.engine_cases import load_published_rows, with_host_step
    from perdollar.predict.llm_serving.engines import FIT_STARTS
    from perdollar.predict.llm_serving.published import (
        _GRIDS,
        MOE_PARAMETERS,
        fit_efficiency,
        load_cases,
        predict_case,
    )

    catalog = catalog_mod.load()
    cuda = _cases(data_dir)
    published = load_published_rows(HERE / "published_llm_serving_engines.csv", catalog)
    rocm = [case for case in published if catalog.accelerator(case.gpu).software_stack == "rocm"]
    dev, _ = load_cases(data_dir / "measurements" / "published_dev.csv", catalog)
    llama = [case for case in dev if case.engine == "llama.cpp"]
    chips = {key: catalog.accelerator(key) for key in {case.gpu for case in cuda + rocm + llama}}
    builds = _published_builds(HERE / "published_llm_serving_engines.csv", catalog)
    pairs: list[tuple[Any, Any]] = []  # (case, the efficiency that predicts it held out)
    full: dict[str, Any] = {}
    for engine in sorted({SHIPS_FIT_OF.get(case.engine, case.engine) for case in cuda}):
        rows = [case for case in cuda if case.engine == engine]
        start = with_host_step(STARTS.get(engine, FIT_STARTS["gpu"]), START_HOST_S.get(engine, 1e-3))
        fixed = PER_STEP | ALSO_FIXED.get(engine, frozenset())
        if engine in SHARED_FREE:
            fixed = frozenset(_GRIDS) - SHARED_FREE[engine] - MOE_PARAMETERS
        full[engine] = _fit(rows, chips, start, fixed)
        for source in sorted({case.source for case in rows}):
            fitted = _fit([case for case in rows if case.source != source], chips, start, fixed)
            pairs += [(case, fitted) for case in rows if case.source == source]
    for case in cuda + rocm:
        # Out of sample already: an engine that ships another's fit, or a ROCm row no fit sees.
        shipped_from = SHIPS_FIT_OF.get(case.engine)
        if shipped_from or case in rocm:
            pairs.append((case, full[shipped_from or case.engine]))
    for gpu in sorted({case.gpu for case in llama}):
        fitted = fit_efficiency([case for case in llama if case.gpu != gpu], chips, fit_start("llama.cpp"))
        pairs += [(case, fitted) for case in llama if case.gpu == gpu]
    out = []
    for case, eff in pairs:
        predicted = predict_case(case, chips[case.gpu], eff)
        figure = FIGURE_OF_KIND.get(case.kind)
        if not predicted or figure is None:
            continue
        chip = chips[case.gpu]
        row = FigureRow(figure, case.arch.is_moe, chip.software_stack, case.engine, chip.architecture)
        source = case.source if case.engine != "llama.cpp" else f"{case.source} ({case.gpu})"
        build, date = builds.get(_build_key(case), ("", ""))
        out.append(HeldOutRow(row, source, _log_error(case, predicted, figure), build, date))
    return out


def _build_key(case: Any) -> tuple[str, str, str, str, float]:
    return (case.source, case.engine, case.gpu, case.model, round(case.measured, 6))


def _published_builds(path: Path, catalog: Any) -> dict[tuple[str, str, str, str, float], tuple[str, str]]:
    """Each published engine row's version and date, by what its case carries."""
    from perdollar.predict.llm_serving.engine_cases import _kind

    out = {}
    with path.open() as handle:
        for r in csv.DictReader(handle):
            try:
                gpu = catalog.accelerator(r["gpu"]).key
            except Exception:
                continue
            _, measured = _kind(r["metric"], float(r["value"]))
            key = (r["source_url"], r["engine"], gpu, r["model"], round(measured, 6))
            out[key] = (r["engine_version"], r["source_date"])
    return out


def build_table(rows: Iterable[HeldOutRow]) -> dict[str, list[dict[str, Any]]]:
    """Per engine and year of the dated builds its rows ran: how fast they ran against the
    prediction (the median of their held-out speed ratios), with the versions and rows behind it."""
    grouped: dict[tuple[str, str], list[HeldOutRow]] = defaultdict(list)
    for row in rows:
        if row.build and row.build_date:
            grouped[(row.figure.engine, row.build_date[:4])].append(row)
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (engine, year), mine in sorted(grouped.items()):
        versions = sorted({row.build for row in mine})
        out[engine].append({"year": year, "versions": versions, "rows": len(mine),
                            "sources": len({row.source for row in mine}),
                            "speed": statistics.median(row.speed for row in mine)})  # fmt: skip
    return dict(out)


def _nongpu_rows() -> list[HeldOutRow]:
    """The non-GPU stacks' decode rows, each predicted by its stack's fit on its other sources."""
    from nongpu_llm_accuracy import DECODE_METRICS, ROWS, decode_pair
    from perdollar.predict.accelerator_stacks import SERVING_STACKS, fit_decode

    catalog = catalog_mod.load()
    rows = [r for r in csv.DictReader(ROWS.open()) if r["metric"] in DECODE_METRICS]
    out = []
    for stack in sorted({r["stack"] for r in rows}):
        mine = [r for r in rows if r["stack"] == stack]
        pairs = {id(r): decode_pair(r, catalog.accelerators[r["chip"]].memory_bandwidth_gbps) for r in mine}
        for source in sorted({(r["source_url"], r["source_version"]) for r in mine}):
            held = [r for r in mine if (r["source_url"], r["source_version"]) == source]
            others = [pairs[id(r)] for r in mine if r not in held]
            if not others:
                continue
            fraction, seconds = fit_decode(others)
            for r in held:
                chip = catalog.accelerators[r["chip"]]
                ideal, measured = pairs[id(r)]
                # A batch-1 row is one request's time per token; a full-batch row the replica's rate.
                figure = "tpot" if r["metric"] == "decode_ms_per_token" else "throughput"
                engine = (
                    SERVING_STACKS[chip.software_stack].name
                    if chip.software_stack in SERVING_STACKS
                    else stack
                )
                row = FigureRow(figure, False, chip.software_stack, engine, chip.architecture)
                # Both figures are a step time's inverse or the time itself: the ratio of step times.
                log_time = math.log((ideal / fraction + seconds) / measured)
                out.append(HeldOutRow(row, source[0], log_time if figure == "tpot" else -log_time))
    return out


def held_out_rows(data_dir: Path) -> list[HeldOutRow]:
    return _gpu_rows(data_dir) + _nongpu_rows()


ROW_FIELDS = ("figure", "moe", "stack", "engine", "family", "source", "log_error", "build", "build_date")


def write_rows(rows: list[HeldOutRow], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(ROW_FIELDS)
        for row in rows:
            f = row.figure
            fields = [f.figure, int(f.moe), f.stack, f.engine, f.family, row.source, repr(row.log_error)]
            writer.writerow([*fields, row.build, row.build_date])


def read_rows(path: Path) -> list[HeldOutRow]:
    out = []
    with path.open() as handle:
        for r in csv.DictReader(handle):
            figure = FigureRow(r["figure"], r["moe"] == "1", r["stack"], r["engine"], r["family"])
            out.append(HeldOutRow(figure, r["source"], float(r["log_error"]), r["build"], r["build_date"]))
    return out


def _inside(log_error: float, low: float, high: float) -> bool:
    """Whether the published figure lies in [prediction × low, prediction × high]."""
    published_over_predicted = math.exp(-log_error)
    return low <= published_over_predicted <= high


def _coverage_line(label: str, rows: list[HeldOutRow], covered: Callable[[HeldOutRow], bool | None]) -> str:
    marks = [covered(row) for row in rows]
    known = [m for m in marks if m is not None]
    share = f"{100 * sum(known) / len(known):5.1f}%" if known else "    -"
    return f"{label} {share}"


def _old_band(row: HeldOutRow) -> bool:
    if row.figure.figure != "throughput":
        return False  # no band at all
    return _inside(row.log_error, *OLD_THROUGHPUT_BAND)


def coverage_report(rows: list[HeldOutRow], table: dict[str, Any]) -> list[str]:
    """One line per group of the table (and per figure overall): rows, before, after, after with
    each row's own source left out of its band."""

    def new_band(row: HeldOutRow) -> bool:
        band = band_for(table, row.figure)
        return _inside(row.log_error, band.low, band.high)

    by_source: dict[str, dict[str, Any]] = {}

    def own_source_out(row: HeldOutRow) -> bool:
        if row.source not in by_source:
            by_source[row.source] = band_table(_pairs(r for r in rows if r.source != row.source))
        band = band_for(by_source[row.source], row.figure)
        return _inside(row.log_error, band.low, band.high)

    lines = [f"{'group':<44} {'rows':>5} {'before':>8} {'after':>8} {'own source out':>15}"]
    grouped: dict[str, list[HeldOutRow]] = defaultdict(list)
    for row in rows:
        grouped[band_for(table, row.figure).group].append(row)
        grouped[f"{row.figure.figure} (all)"].append(row)
    for group in sorted(grouped):
        mine = grouped[group]
        cells = [_coverage_line("", mine, check).strip() for check in (_old_band, new_band, own_source_out)]
        lines.append(f"{group:<44} {len(mine):>5} {cells[0]:>8} {cells[1]:>8} {cells[2]:>15}")
    return lines


def _pairs(rows: Iterable[HeldOutRow]) -> list[tuple[FigureRow, str, float]]:
    return [(row.figure, row.source, row.log_error) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data_dir", type=Path, help="the shared data folder (measurements/published_dev.csv)")
    parser.add_argument("--write", action="store_true", help=f"store the table at {BANDS_PATH.name}")
    parser.add_argument(
        "--rows", type=Path, help="read the held-out rows from this CSV if it exists, else write them there"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.rows is not None and args.rows.is_file():
        rows = read_rows(args.rows)
    else:
        rows = held_out_rows(args.data_dir)
        if args.rows is not None:
            write_rows(rows, args.rows)
    table = band_table(_pairs(rows))
    table["builds"] = build_table(rows)
    table["computed"] = datetime.date.today().isoformat()
    table["command"] = "python3 benchmarks/llm_serving_bands.py SHARED_DATA_DIR --write"
    print(f"{len(rows)} held-out rows; bands at {LEVEL:.0%}, a group needs {MIN_ROWS} rows")
    print(f"{'group':<44} {'rows':>5} {'sources':>7} {'low':>6} {'high':>6}")
    for key, group in table["groups"].items():
        print(f"{key:<44} {group['rows']:>5} {group['sources']:>7} {group['low']:6.2f} {group['high']:6.2f}")
    print("\nengine builds by year: how fast they ran against the prediction (median, held out)")
    for engine, years in table["builds"].items():
        for b in years:
            versions = ", ".join(b["versions"])
            counts = f"{b['rows']:>3} rows, {b['sources']} sources"
            print(f"  {engine:<8} {b['year']}  {b['speed']:5.2f}x  {counts}, {versions}")
    print("\ncoverage: share of held-out rows inside their 80% band")
    print("\n".join(coverage_report(rows, table)))
    if args.write:
        BANDS_PATH.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
        print(f"\nwrote {BANDS_PATH}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
