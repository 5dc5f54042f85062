"""Validate predictions against published measurements made by others.

Each target row is predicted from every anchor row of its pair group (calibrated: the anchor's
figure × the model's time ratio, under the host floor that the anchor GPU's figures at other batch
sizes show, see ``host_curve``) and from specs alone (traced reference workloads only). Rows
whose model has no reference workload use the fallback profile (see ``fallback.py``) and are
reported separately. With target GPUs given, the figures are held out: the target rows never
inform the parameters that predict them. The shipped parameters are used as they are when their
fit saw no row of a target GPU in any of the file's sources (a file of new measurements); where
it did (the development set itself), they are refitted on the file's other GPUs first. A refit
on a small file is the weaker model, so it is only done when honesty needs it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator
from perdollar.errors import PerdollarError
from perdollar.predict.lab.evaluation import Cases, ape_summary, build_cases, pair_indices, spearman
from perdollar.predict.lab.fit import FitResult, held_out_fit, model_step_times, predict_pairs
from perdollar.predict.llm_serving.published import validation_section
from perdollar.predict.params import ShippedModel, shipped_model
from perdollar.predict.published import normalise, read_published_csv
from perdollar.predict.references import published_profile_provider


def _alias(catalog: Catalog) -> Callable[[str], str | None]:
    cache: dict[str, str | None] = {}

    def key(name: str) -> str | None:
        if name not in cache:
            try:
                cache[name] = catalog.accelerator(name).key
            except Exception:  # unknown GPU names are reported as uncovered, not fatal
                cache[name] = None
        return cache[name]

    return key


def _peak(acc: Accelerator, precision: str) -> float:
    dtype = {"amp": "fp16", "fp16": "fp16", "f16": "fp16", "bf16": "bf16", "tf32": "tf32", "fp8": "fp8"}.get(
        precision, "fp32"
    )
    return acc.peak_tflops(dtype) or acc.peak_tflops("fp16") or acc.peak_fp32_tflops or 1.0


def baselines(
    preds: pd.DataFrame, rows: pd.DataFrame, accelerators: Mapping[str, Accelerator]
) -> dict[str, dict]:
    """The naive ratio predictors on the same pairs (memory bandwidth, peak FLOPS, their geometric mean)."""
    precision = rows["precision"].astype(str).to_numpy()[preds["case_target"].to_numpy()]
    a = [accelerators[k] for k in preds["accelerator_anchor"]]
    t = [accelerators[k] for k in preds["accelerator_target"]]
    bw = np.array([y.memory_bandwidth_gbps / x.memory_bandwidth_gbps for x, y in zip(a, t, strict=True)])
    fl = np.array([_peak(y, p) / _peak(x, p) for x, y, p in zip(a, t, precision, strict=True)])
    anchor, actual = preds["anchor_value"].to_numpy(), preds["actual"].to_numpy()
    return {
        "bandwidth_ratio": ape_summary(anchor * bw, actual),
        "flops_ratio": ape_summary(anchor * fl, actual),
        "geometric_mean": ape_summary(anchor * np.sqrt(bw * fl), actual),
    }


def beaten_by(ours: Mapping[str, object], naive: Mapping[str, Mapping[str, object]]) -> list[str]:
    """The naive baselines whose median error on the same pairs is below perdollar's, best first."""
    mine = ours.get("median_ape")
    if not isinstance(mine, int | float):  # None: no pair to summarise
        return []
    better = [
        (error, name) for name, s in naive.items() if isinstance(error := s.get("median_ape"), int | float)
    ]
    return [name for error, name in sorted(better) if error < mine]


def run_validation(
    path: str | Path, catalog: Catalog, target_gpus: list[str] | None = None, *, refit: bool = True
) -> dict[str, object]:
    started = time.perf_counter()
    accelerators = dict(catalog.accelerators)
    rows = normalise(read_published_csv(path), _alias(catalog))
    if not rows["usable"].any():
        counted = f"{len(rows)} row{'' if len(rows) == 1 else 's'}"
        raise PerdollarError(
            f"{path} has no usable row ({counted}; a usable one has a positive, finite throughput "
            "on one GPU)",
            "give rows of one GPU each (gpu_count 1) whose throughput is a number, as in the sample "
            "`perdollar validate` reads without a file",
        )
    cases = build_cases(rows, accelerators, published_profile_provider())
    targets = set(target_gpus) if target_gpus else None
    absent = sorted(targets - set(rows["gpu"])) if targets else []
    if absent:
        raise PerdollarError(
            f"no row of {path} has gpu {', '.join(map(repr, absent))}",
            "give --target-gpus as written in the file's gpu column, e.g. "
            + ", ".join(sorted(set(rows["gpu"].astype(str)))[:5]),
        )
    all_pairs = pair_indices(cases)
    pairs = pair_indices(cases, targets)
    if not len(pairs):
        raise PerdollarError(
            f"{path} has no anchor→target pair: no two usable rows measure the same model and setup "
            "on different GPUs" + (" with a target GPU" if targets else ""),
            "add the same measurement on a second GPU (same source, model, task, precision and batch)",
        )
    shipped = shipped_model()
    seen = _targets_the_shipped_fit_saw(shipped, rows, targets) if targets else []
    if targets and refit and (seen is None or seen):
        informed, prior_note = _refit_start(shipped, rows, targets)
        fit = held_out_fit(cases, all_pairs, targets, informed)
        why = (
            f"the shipped fit saw rows of {', '.join(seen)} in this file's sources"
            if seen
            else "the shipped fit does not say which rows it saw"
        )
        fit_note = (
            f"refitted on this file without the target GPUs (held out: {why}); start and prior: {prior_note}"
        )
    elif targets and seen == []:
        fit = FitResult.shipped()
        fit_note = (
            "shipped parameters, as they are (held out: their fit saw no row of a target GPU "
            "in this file's sources)"
        )
    else:
        fit = FitResult.shipped()
        fit_note = "shipped parameters (fitted on the development set)" + (
            "; --no-refit: they may have seen the target rows" if targets else ""
        )
    preds = predict_pairs(cases, pairs, fit)
    ref, fb = preds[preds["reference"]], preds[~preds["reference"]]
    calibrated_all = ape_summary(preds["calibrated"], preds["actual"])
    naive = baselines(preds, cases.rows, accelerators) if len(preds) else {}
    result: dict[str, object] = {
        "file": str(path),
        "target_gpus": sorted(targets) if targets else "all",
        "fit": fit_note,
        "pairs": len(preds),
        "calibrated": ape_summary(ref["calibrated"], ref["actual"]),
        "spec_only": ape_summary(ref["spec"], ref["actual"]),
        "fallback": {
            "note": "models without a reference workload: fallback profile (fitted per model name)",
            "calibrated": ape_summary(fb["calibrated"], fb["actual"]),
        },
        "calibrated_all": calibrated_all,
        "spearman": _mean_spearman(cases, fit, targets),
        "coverage": _coverage(rows, preds, targets),
        "left_out": _left_out(rows),
        "per_gpu": _per_gpu(preds),
        "baselines": naive,
    }
    result["beaten_by"] = beaten_by(calibrated_all, naive)
    llm_serving = validation_section(Path(path), catalog, targets)
    if llm_serving is not None:
        result["llm_serving"] = llm_serving
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _targets_the_shipped_fit_saw(
    shipped: ShippedModel, rows: pd.DataFrame, targets: set[str]
) -> list[str] | None:
    """Target GPUs (as the file names them) whose rows of one of this file's sources informed the
    shipped fit; None when the shipped fit does not say which sources it saw (then: refit)."""
    fitted = shipped.provenance.get("fitted_sources")
    if not isinstance(fitted, dict):
        return None
    mine = rows[rows["gpu"].isin(targets) & rows["accelerator_key"].notna()]
    seen = {
        gpu
        for gpu, source, key in zip(mine["gpu"], mine["source_id"], mine["accelerator_key"], strict=True)
        if key in fitted.get(source, ())
    }
    return sorted(seen)


def _refit_start(
    shipped: ShippedModel, rows: pd.DataFrame, targets: set[str]
) -> tuple[ShippedModel | None, str]:
    """Where a held-out refit starts and what it is pulled towards (None: the defaults).

    The shipped parameters are better informed, but only usable if their own fit never saw a
    target GPU; otherwise they would carry the held-out GPUs' measurements into the refit.
    """
    fitted = shipped.provenance.get("fitted_accelerators")
    target_keys = set(rows.loc[rows["gpu"].isin(targets), "accelerator_key"].dropna())
    if not isinstance(fitted, list | dict):  # None: the shipped fit does not say
        return None, "defaults (the shipped fit does not say which GPUs it saw)"
    if not target_keys & set(fitted):
        return shipped, "shipped parameters (their fit saw none of the target GPUs)"
    return None, "defaults (the shipped fit saw a target GPU)"


def _mean_spearman(cases: Cases, fit: FitResult, targets: set[str] | None) -> dict[str, float | None]:
    rows = cases.rows.assign(model_rate=1.0 / model_step_times(cases, fit))
    values = []
    for _, group in rows.groupby("pair_key"):
        if group["gpu"].nunique() < 3 or (targets and not group["gpu"].isin(targets).any()):
            continue
        rho = spearman(group["model_rate"].to_numpy(), group["per_gpu_throughput"].to_numpy())
        if np.isfinite(rho):
            values.append(rho)
    return {"mean": float(np.mean(values)) if values else None, "workloads": len(values)}


def _coverage(rows: pd.DataFrame, preds: pd.DataFrame, targets: set[str] | None) -> dict[str, float | None]:
    usable = rows[rows["usable"]]
    gpus_per_key = usable.groupby("pair_key")["gpu"].nunique()
    candidates = usable[usable["pair_key"].map(gpus_per_key) > 1]
    if targets:
        candidates = candidates[candidates["gpu"].isin(targets)]
    predicted_keys = set(zip(preds["pair_key"], preds["gpu_target"], strict=True)) if len(preds) else set()
    covered = sum(
        (k, g) in predicted_keys for k, g in zip(candidates["pair_key"], candidates["gpu"], strict=True)
    )
    n = len(candidates)
    return {"fraction": covered / n if n else None, "predicted_rows": int(covered), "candidate_rows": int(n)}


def _left_out(rows: pd.DataFrame) -> dict[str, int]:
    """Rows that can be neither anchor nor target, by reason (a row counts under its first reason)."""
    count = pd.to_numeric(rows["gpu_count"], errors="coerce").fillna(1)
    multi = count > 1
    flagged = ~multi & rows["distrusted"]
    unreadable = ~multi & ~flagged & ~rows["usable"]  # no positive number in throughput
    unknown = rows["usable"] & rows["accelerator_key"].isna()
    return {
        "multi_gpu_rows": int(multi.sum()),
        "rows_flagged_implausible_by_source": int(flagged.sum()),
        "rows_without_a_positive_throughput": int(unreadable.sum()),
        "rows_on_gpus_the_catalog_lacks": int(unknown.sum()),
    }


def _per_gpu(preds: pd.DataFrame) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for gpu, group in preds.groupby("gpu_target"):
        ref = group[group["reference"]]
        out[str(gpu)] = {
            "calibrated_all": ape_summary(group["calibrated"], group["actual"]),
            "calibrated_reference": ape_summary(ref["calibrated"], ref["actual"]),
            "spec_only": ape_summary(ref["spec"], ref["actual"]),
        }
    return out
