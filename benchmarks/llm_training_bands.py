"""The language-model training predictions' 80% bands from their held-out errors, and how often they hold.

    PYTHONPATH=src python3 benchmarks/llm_training_bands.py [--write] [--rows FILE]

Every published or measured training figure perdollar is checked on is predicted by a fit that
never saw its source, and its log(predicted / published) of tokens per second (so of step time and
of cost, which scale as its inverse) becomes one held-out row:
- ``published_llm_training.csv``: each collection by the ``LLMEfficiency`` fitted on the others
  (llm_training_accuracy.py --fit: leave one collection out; the holdout collections, torchtitan
  and torchao, by the fit on all the rest);
- ``published_llm_training_moe.csv``: each source by the grouped-GEMM efficiency fitted on the
  other sources (llm_training_moe_accuracy.py);
- ``published_llm_finetuning.csv`` (torchtune) and the PEFT steps measured on one H100 and one H200:
  the shipped fit, which saw none of them (the one row the frameworks' host constant was fitted on
  left out, as llm_finetuning_accuracy.py does);
- ``published_maxtext_tpu.csv``: each source by the MaxText fit on the others (maxtext_tpu_accuracy.py);
- ``published_nxd_training.csv``: each Neuron release by the NxD fit on the others
  (nxd_training_accuracy.py).
Rows are grouped by dense or mixture-of-experts, software stack, framework and chip architecture;
each group's band follows perdollar.predict.held_out_bands.

--write stores the table the predictor reads (src/perdollar/predict/data/training_bands.json).

Coverage: the share of rows whose published figure lies inside the band around its held-out
prediction, for the band the predictor had before (the reference workloads' spec errors on GPUs,
a fixed 0.7-1.3 on TPU and Trainium) and for the new bands; "own source out" recomputes each row's
band without its own source's rows.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from perdollar import catalog as catalog_mod  # noqa: E402
from perdollar.predict.held_out_bands import LEVEL, MIN_ROWS, MIN_SOURCES, FigureRow, band_for  # noqa: E402
from perdollar.predict.llm.training_bands import BANDS_PATH, FIGURE, band_table, framework_group  # noqa: E402


@dataclass(frozen=True, slots=True)
class HeldOutRow:
    figure: FigureRow
    source: str
    log_error: float  # log(predicted / published) of tokens per second


def _row(
    moe: bool, accelerator: Any, framework: str, source: str, predicted: float, published: float
) -> HeldOutRow:
    stack, family = accelerator.software_stack, accelerator.architecture
    figure = FigureRow(FIGURE, moe, stack, framework_group(framework), family)
    return HeldOutRow(figure, source, math.log(predicted / published))


def dense_rows() -> list[HeldOutRow]:
    """published_llm_training.csv, each collection predicted by a fit without it."""
    from llm_training_accuracy import CSV, fit, model_predictor, predict_all
    from llm_training_rows import load_runs

    runs, _ = load_runs(CSV)
    model = model_predictor()
    assert model is not None
    predict, start = model
    trainable = [r for r in runs if not r.holdout]
    out = []
    holdout_fit = None
    for collection in sorted({r.collection for r in runs}):
        held = [r for r in runs if r.collection == collection]
        if held[0].holdout:
            holdout_fit = holdout_fit or fit(trainable, predict, start)
            fitted = holdout_fit
        else:
            fitted = fit([r for r in trainable if r.collection != collection], predict, start)
        predicted = predict_all(held, predict, fitted)
        for run in held:
            if run.index in predicted:
                framework = run.plan().resolved_framework.name
                out.append(_row(run.architecture.is_moe, run.accelerator, framework, collection,
                                predicted[run.index], run.tokens_per_second))  # fmt: skip
        print(f"  {collection}: {sum(r.source == collection for r in out)} rows", flush=True)
    return out


def moe_rows() -> list[HeldOutRow]:
    """published_llm_training_moe.csv, each source by the grouped-GEMM efficiency of the others."""
    from llm_training_moe_accuracy import CSV, fit, load_rows, predict
    from perdollar.predict.llm import LLMEfficiency

    rows = load_rows(CSV)
    out = []
    for source in sorted({r["source"] for r in rows}):
        fitted = fit([r for r in rows if r["source"] != source], LLMEfficiency())
        for row in (r for r in rows if r["source"] == source):
            per_gpu = predict(row, fitted)
            if per_gpu:
                framework = row["plan"].resolved_framework.name
                out.append(_row(True, row["accelerator"], framework, source, per_gpu, row["measured"]))
    return out


def finetuning_rows() -> list[HeldOutRow]:
    """torchtune's table and the measured PEFT steps, by the shipped fit that saw none of them."""
    from llm_finetuning_accuracy import measured_rows, published_rows

    catalog = catalog_mod.load()
    # published_rows gives one row per line of the file, in its order: the line names the GPU.
    lines = list(csv.DictReader((HERE / "published_llm_finetuning.csv").open()))
    torchtune = [
        (row, catalog.accelerators[line["gpu"]])
        for row, line in zip(published_rows(catalog), lines, strict=True)
    ]
    measured = []
    for name, instance in (("h200", "p5en.48xlarge"), ("h100", "p5.48xlarge")):
        accelerator = catalog.accelerators[catalog.instance(instance).accelerator_key]
        measured += [
            (row, accelerator)
            for row in measured_rows(catalog, HERE / f"gpu_lora_steps_{name}.csv", instance)
        ]
    out = []
    for row, accelerator in torchtune + measured:
        if not row["fitted"]:
            out.append(
                _row(False, accelerator, row["framework"], row["source"], row["predicted"], row["published"])
            )
    return out


def maxtext_rows() -> list[HeldOutRow]:
    """MaxText's TPU tables, each source by the fit on the others (the achieved share's ratio is
    the tokens-per-second ratio)."""
    from maxtext_tpu_accuracy import ROWS, published_runs
    from perdollar.predict.maxtext_tpu import fit, predicted_share

    accelerators = catalog_mod.load().accelerators
    runs = published_runs(ROWS, accelerators)
    out = []
    for source in sorted({r.source for r in runs}):
        fitted = fit([r for r in runs if r.source != source], accelerators)
        for r in (r for r in runs if r.source == source):
            predicted = predicted_share(fitted, r, accelerators)
            out.append(_row(False, accelerators[r.chip], "maxtext", source, predicted, r.achieved))
    return out


def nxd_rows() -> list[HeldOutRow]:
    """NxD Training's Trainium tables, each Neuron release by the fit on the others."""
    from nxd_training_accuracy import ROWS, published_runs
    from perdollar.predict.nxd_trainium import fit, predicted_share

    trainium = catalog_mod.load().accelerators["Trainium"]
    runs = published_runs(ROWS, trainium)
    out = []
    for source in sorted({r.source for r in runs}):
        fitted = fit([r for r in runs if r.source != source], trainium)
        for r in (r for r in runs if r.source == source):
            out.append(
                _row(
                    False, trainium, "nxd-training", source, predicted_share(fitted, r, trainium), r.achieved
                )
            )
    return out


def held_out_rows() -> list[HeldOutRow]:
    out = []
    for name, collect in (("TPU", maxtext_rows), ("Trainium", nxd_rows), ("fine-tuning", finetuning_rows),
                          ("MoE", moe_rows), ("dense", dense_rows)):  # fmt: skip
        began = time.perf_counter()
        rows = collect()
        print(f"{name}: {len(rows)} held-out rows ({time.perf_counter() - began:.0f} s)", flush=True)
        out += rows
    return out


ROW_FIELDS = ("moe", "stack", "framework", "family", "source", "log_error")


def write_rows(rows: list[HeldOutRow], path: Path) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(ROW_FIELDS)
        for row in rows:
            f = row.figure
            writer.writerow([int(f.moe), f.stack, f.engine, f.family, row.source, repr(row.log_error)])


def read_rows(path: Path) -> list[HeldOutRow]:
    out = []
    with path.open() as handle:
        for r in csv.DictReader(handle):
            figure = FigureRow(FIGURE, r["moe"] == "1", r["stack"], r["framework"], r["family"])
            out.append(HeldOutRow(figure, r["source"], float(r["log_error"])))
    return out


def _inside(log_error: float, low: float, high: float) -> bool:
    return low <= math.exp(-log_error) <= high


def old_band(row: HeldOutRow) -> tuple[float, float]:
    """The band a prediction like the row's carried before: the reference workloads' spec errors
    on GPUs (widened on ROCm), the fixed stack band on TPU and Trainium."""
    from perdollar.predict.nongpu_llm import TRAINING_BAND
    from perdollar.predict.params import shipped_model

    if row.figure.stack in ("xla", "neuron"):
        return TRAINING_BAND
    errors = shipped_model().errors_for("spec", row.figure.stack)
    return math.exp(errors.q10), math.exp(errors.q90)


def coverage_report(rows: list[HeldOutRow], table: dict[str, Any]) -> list[str]:
    by_source: dict[str, dict[str, Any]] = {}

    def new_band(row: HeldOutRow) -> bool:
        band = band_for(table, row.figure)
        return _inside(row.log_error, band.low, band.high)

    def own_source_out(row: HeldOutRow) -> bool:
        if row.source not in by_source:
            by_source[row.source] = band_table(
                (r.figure, r.source, r.log_error) for r in rows if r.source != row.source
            )
        band = band_for(by_source[row.source], row.figure)
        return _inside(row.log_error, band.low, band.high)

    grouped: dict[str, list[HeldOutRow]] = defaultdict(list)
    for row in rows:
        grouped[band_for(table, row.figure).group].append(row)
        grouped["all rows"].append(row)
    lines = [f"{'band the row takes':<52} {'rows':>5} {'before':>7} {'after':>7} {'own source out':>15}"]
    for group in sorted(grouped):
        mine = grouped[group]
        shares = [
            100 * sum(check(row) for row in mine) / len(mine)
            for check in (lambda r: _inside(r.log_error, *old_band(r)), new_band, own_source_out)
        ]
        lines.append(f"{group:<52} {len(mine):>5} {shares[0]:6.1f}% {shares[1]:6.1f}% {shares[2]:14.1f}%")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write", action="store_true", help=f"store the table at {BANDS_PATH.name}")
    parser.add_argument(
        "--rows", type=Path, help="read the held-out rows from this CSV if it exists, else write them there"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    if args.rows is not None and args.rows.is_file():
        rows = read_rows(args.rows)
    else:
        rows = held_out_rows()
        if args.rows is not None:
            write_rows(rows, args.rows)
    table = band_table((row.figure, row.source, row.log_error) for row in rows)
    table["computed"] = datetime.date.today().isoformat()
    table["command"] = "python3 benchmarks/llm_training_bands.py --write"
    sources = len({row.source for row in rows})
    print(f"\n{len(rows)} held-out rows from {sources} sources; bands at {LEVEL:.0%}, "
          f"a group needs {MIN_ROWS} rows from {MIN_SOURCES} sources")  # fmt: skip
    print(f"{'group':<52} {'rows':>5} {'sources':>7} {'low':>6} {'high':>6}")
    for key, group in table["groups"].items():
        print(f"{key:<52} {group['rows']:>5} {group['sources']:>7} {group['low']:6.2f} {group['high']:6.2f}")
    for name, wide in table["unvalidated"].items():
        print(f"{'unvalidated: ' + name:<52} {'':>5} {'':>7} {wide['low']:6.2f} {wide['high']:6.2f}")
    from perdollar.predict.nongpu_llm import TRAINING_BAND
    from perdollar.predict.params import shipped_model

    spec = shipped_model().errors_for("spec")
    print(f"before: GPUs ×{math.exp(spec.q10):.2f}–×{math.exp(spec.q90):.2f} (the reference workloads' spec "
          f"errors, wider on ROCm), TPU and Trainium ×{TRAINING_BAND[0]}–×{TRAINING_BAND[1]}")  # fmt: skip
    print("\ncoverage: share of held-out rows inside their 80% band")
    print("\n".join(coverage_report(rows, table)))
    if args.write:
        BANDS_PATH.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
        print(f"\nwrote {BANDS_PATH}")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
