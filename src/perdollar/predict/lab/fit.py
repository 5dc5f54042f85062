"""Fit the roofline's global efficiencies on published measurements and ship them.

    python -m perdollar.predict.lab.fit SHARED_DATA_DIR [--out FILE]

reads ``SHARED_DATA_DIR/measurements/published_dev.csv``, the accelerator table and the GPU
name aliases next to it, fits the global parameters (and the fallback descriptors of models
without a reference workload) by robust least squares on anchor→target pair errors (weighted so
that every published row counts the same, however many GPUs its table has; each anchor under the
host floor that its GPU's rows at other batch sizes show, as ``predict_pairs`` predicts), runs a
leave-one-GPU-out evaluation (each GPU's pairs predicted by a fit that never saw that GPU) and
writes ``predict/data/params.json`` with the fit's provenance and the held-out error quantiles
that the prediction bands come from.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import least_squares

from perdollar.predict.lab.development import fitted_sources, load_development_set
from perdollar.predict.lab.evaluation import (
    Cases,
    batch_sizes,
    descriptor_arrays,
    fallback_step_times_from,
    reference_step_times,
)
from perdollar.predict.lab.fallback import DEFAULT_DESCRIPTOR
from perdollar.predict.lab.host_curve import calibrated_step_seconds, fit_host_curves
from perdollar.predict.params import (
    FITTED_BOUNDS,
    ErrorQuantiles,
    ModelParams,
    ShippedModel,
    params_to_json,
    shipped_model,
)

GLOBAL_NAMES = tuple(FITTED_BOUNDS)
DEFAULT_MODEL = ShippedModel(ModelParams())  # defaults: start and prior of every held-out fit
FULL_FIT_MAX_NFEV = 200  # enough for the fit from the defaults to converge on the development set
_PRIOR_WEIGHT_GLOBAL = 0.3  # pulls a parameter back to its start when the data say little
_PRIOR_WEIGHT_FAMILY = 0.05
_SPEC_WEIGHT = 0.5  # spec-only residuals of traced workloads fix the absolute efficiency level
_MAX_LOG_BAND = 1.1  # a band wider than 3x either way says nothing more


def _to_unit(name: str, value: float) -> float:
    lo, hi = FITTED_BOUNDS[name]
    frac = min(max((value - lo) / (hi - lo), 1e-4), 1 - 1e-4)
    return math.log(frac / (1 - frac))


def _from_unit(name: str, z: float) -> float:
    lo, hi = FITTED_BOUNDS[name]
    return lo + (hi - lo) / (1 + math.exp(-z))


@dataclass
class FitResult:
    params: ModelParams
    descriptors: dict[str, dict[str, float]]
    cost: float

    @classmethod
    def shipped(cls) -> FitResult:
        """The parameters bundled with perdollar, as a fit (their fit saw every development GPU)."""
        model = shipped_model()
        return cls(model.params, dict(model.fallback), 0.0)


def _case_step_times(
    cases: Cases, params: ModelParams, log_bpf: np.ndarray, log_launch: np.ndarray
) -> np.ndarray:
    times = fallback_step_times_from(cases, params, log_bpf, log_launch)
    if cases.profiles:
        times = np.where(np.isnan(times), reference_step_times(cases, params), times)
    return times


def model_step_times(cases: Cases, fit: FitResult) -> np.ndarray:
    """The model's seconds per step of every case under ``fit`` (traced or fallback profile)."""
    return _case_step_times(cases, fit.params, *descriptor_arrays(cases, fit.descriptors))


def pair_weights(pairs: pd.DataFrame) -> np.ndarray:
    """Weight of each pair's residual, so that every published row counts the same.

    A row of a table that measured n GPUs is in 2(n − 1) ordered pairs: unweighted, a benchmark
    table of 12 GPUs would outvote one of 3 GPUs 5.5 to 1 per row, and its GPUs' quirks would set
    the global efficiencies. Squared weights of a row's pairs sum to the same whatever n is; they
    are scaled to a mean square of 1 so the robust loss keeps its scale.
    """
    if pairs.empty:
        return np.ones(0)
    gpus = pairs.groupby("pair_key")["gpu_anchor"].transform("nunique").to_numpy(dtype=float)
    weight = 1.0 / np.sqrt(np.maximum(gpus - 1.0, 1.0))
    return weight * np.sqrt(len(weight) / np.sum(weight**2))


def fit_model(
    cases: Cases,
    pairs: pd.DataFrame,
    start: ShippedModel,
    *,
    exclude_gpus: set[str] = frozenset(),  # type: ignore[assignment]
    exclude_rows: np.ndarray | None = None,
    max_nfev: int = FULL_FIT_MAX_NFEV,
) -> FitResult:
    """Robust least squares on log pair errors (and spec errors of traced workloads).

    Rows of ``exclude_gpus``, and rows where ``exclude_rows`` (a mask over ``cases.rows``) is
    true, inform nothing: no pair with one of them as anchor or target, no spec residual.
    """
    rows = cases.rows
    excluded = rows["gpu"].isin(exclude_gpus).to_numpy()
    if exclude_rows is not None:
        excluded = excluded | np.asarray(exclude_rows, dtype=bool)
    use = pairs[~excluded[pairs["case_anchor"]] & ~excluded[pairs["case_target"]]]
    anchor, target = use["case_anchor"].to_numpy(), use["case_target"].to_numpy()
    thr = rows["per_gpu_throughput"].to_numpy(dtype=float)
    weight = pair_weights(use)
    reference_rows = np.flatnonzero(cases.is_reference & ~excluded)
    batch = batch_sizes(rows)

    families = cases.families
    family_index = (
        rows["family"].map({f: i for i, f in enumerate(families)}).fillna(-1).astype(int).to_numpy()
    )
    start_desc = [start.fallback.get(f, DEFAULT_DESCRIPTOR) for f in families]
    z0_global = np.array([_to_unit(n, getattr(start.params, n)) for n in GLOBAL_NAMES])
    z0_family = np.array([[d["log_bytes_per_flop"], d["log_launches"]] for d in start_desc]).reshape(-1)
    z0 = np.concatenate([z0_global, z0_family])
    n_global = len(GLOBAL_NAMES)

    def unpack(z: np.ndarray) -> tuple[ModelParams, np.ndarray, np.ndarray]:
        values = {n: _from_unit(n, z[i]) for i, n in enumerate(GLOBAL_NAMES)}
        params = start.params.with_values(values)
        fam = z[n_global:].reshape(-1, 2)
        safe = np.maximum(family_index, 0)
        log_bpf = fam[safe, 0] if len(fam) else np.zeros(len(rows))
        log_launch = fam[safe, 1] if len(fam) else np.zeros(len(rows))
        return params, log_bpf, log_launch

    # Pairs are scored as they are predicted: under the host floors of the anchors' curves. The
    # floors are read once, with the starting model's times, so that the loss stays smooth.
    curves = fit_host_curves(rows, _case_step_times(cases, *unpack(z0)))
    host, scale = curves.host_seconds[anchor], curves.scale[anchor]
    anchor_step, target_step = batch[anchor] / thr[anchor], batch[target] / thr[target]

    def residuals(z: np.ndarray) -> np.ndarray:
        params, log_bpf, log_launch = unpack(z)
        times = _case_step_times(cases, params, log_bpf, log_launch)
        predicted = calibrated_step_seconds(anchor_step, times[anchor], times[target], host, scale)
        pair_res = weight * np.log(target_step / predicted)
        spec_res = _SPEC_WEIGHT * np.log(batch[reference_rows] / times[reference_rows] / thr[reference_rows])
        # Weakly informed parameters are pulled back to where they started.
        prior = np.concatenate(
            [
                _PRIOR_WEIGHT_GLOBAL * (z[:n_global] - z0_global),
                _PRIOR_WEIGHT_FAMILY * (z[n_global:] - z0_family),
            ]
        )
        return np.nan_to_num(np.concatenate([pair_res, spec_res, prior]), nan=5.0, posinf=5.0, neginf=-5.0)

    # A dense Jacobian with the exact trust-region solver: the sparse (LSMR) path stalls on
    # this problem's kinks (wave quantisation, min/max of the roofline) far from the optimum.
    solution = least_squares(residuals, z0, loss="soft_l1", f_scale=0.1, max_nfev=max_nfev, x_scale=1.0)
    params, _, _ = unpack(solution.x)
    fam = solution.x[n_global:].reshape(-1, 2)
    # A model with no pair left in the fit learnt nothing: it keeps what the start knew of it,
    # else it is left out, so that it is predicted with the median of its group's fitted models.
    in_pairs = set(rows["family"].to_numpy()[np.concatenate([anchor, target])])
    descriptors = {
        f: {"log_bytes_per_flop": float(fam[i, 0]), "log_launches": float(fam[i, 1])}
        for i, f in enumerate(families)
        if f in in_pairs or f in start.fallback
    }
    return FitResult(params, descriptors, float(solution.cost))


def predict_pairs(cases: Cases, pairs: pd.DataFrame, fit: FitResult) -> pd.DataFrame:
    """Calibrated and spec-only predictions of every pair's target.

    Calibrated: the anchor's step × the model's time ratio, under the host floor that the
    anchor GPU's rows at other batch sizes show (``host_curve``; none where they are too few).
    """
    rows = cases.rows
    fams = rows["family"].to_numpy()
    times = model_step_times(cases, fit)
    thr = rows["per_gpu_throughput"].to_numpy(dtype=float)
    batch = batch_sizes(rows)
    a, t = pairs["case_anchor"].to_numpy(), pairs["case_target"].to_numpy()
    curves = fit_host_curves(rows, times)
    out = pairs.copy()
    out["actual"] = thr[t]
    out["anchor_value"] = thr[a]
    out["anchor_host_seconds"] = curves.host_seconds[a]
    out["calibrated"] = batch[t] / calibrated_step_seconds(
        batch[a] / thr[a], times[a], times[t], curves.host_seconds[a], curves.scale[a]
    )
    out["spec"] = np.where(cases.is_reference[t], batch[t] / times[t], np.nan)
    out["reference"] = cases.is_reference[t]
    out["model"] = rows["model"].to_numpy()[t]
    out["family"] = fams[t]
    out["accelerator_anchor"] = rows["accelerator_key"].to_numpy()[a]
    out["accelerator_target"] = rows["accelerator_key"].to_numpy()[t]
    return out


def held_out_fit(
    cases: Cases, pairs: pd.DataFrame, exclude_gpus: set[str], informed: ShippedModel | None = None
) -> FitResult:
    """A fit that no row of ``exclude_gpus`` informs by any route: data, prior or starting point.

    The fit is not convex: started from parameters that saw the held-out GPUs it stays in their
    basin, which flatters the held-out error. So it starts from, and is pulled towards, the
    defaults, or ``informed``: parameters whose own fit saw none of these GPUs.
    """
    base = informed or DEFAULT_MODEL
    return fit_model(cases, pairs, base, exclude_gpus=exclude_gpus)


def leave_one_gpu_out(
    cases: Cases,
    pairs: pd.DataFrame,
    progress: Callable[[str], None] | None = None,
    group_of: Callable[[str], str] | None = None,
) -> pd.DataFrame:
    """Every pair's target predicted by a fit that saw no row of the target's GPU.

    ``group_of`` maps a GPU name to a group (e.g. its architecture generation): then a whole
    group is held out at once, so no GPU of the target's generation informs the fit.
    """
    group_of = group_of or (lambda gpu: gpu)
    groups: dict[str, set[str]] = {}
    for gpu in set(cases.rows["gpu"]):
        groups.setdefault(group_of(gpu), set()).add(gpu)
    parts = []
    for name in sorted(groups):
        members = groups[name]
        targets = pairs[pairs["gpu_target"].isin(members)]
        if targets.empty:
            continue
        if progress:
            progress(name)
        parts.append(predict_pairs(cases, targets, held_out_fit(cases, pairs, members)))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def leave_one_collection_out(
    cases: Cases, pairs: pd.DataFrame, progress: Callable[[str], None] | None = None
) -> pd.DataFrame:
    """Every pair predicted by a fit that saw no row of its collection (the rows' ``file``).

    A collection is one publisher's set of tables (Lambda's PyTorch benchmark, NVIDIA's README
    tables, …): held out whole, its GPUs are still known from other collections, but nothing of
    its software, hosts or models is. Pairs never cross sources, so anchor and target are both
    unseen. This is how a file of new measurements meets the shipped parameters.
    """
    collection = cases.rows["file"].astype(str).to_numpy()
    parts = []
    for name in sorted(set(collection)):
        in_collection = collection == name
        targets = pairs[in_collection[pairs["case_target"].to_numpy()]]
        if targets.empty:
            continue
        if progress:
            progress(name)
        fit = fit_model(cases, pairs, DEFAULT_MODEL, exclude_rows=in_collection)
        parts.append(predict_pairs(cases, targets, fit).assign(collection=name))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def error_quantiles(predicted: np.ndarray, actual: np.ndarray) -> ErrorQuantiles:
    ok = np.isfinite(predicted) & np.isfinite(actual) & (predicted > 0) & (actual > 0)
    log_err = np.log(actual[ok] / predicted[ok])
    if not len(log_err):
        return ErrorQuantiles(0, -0.5, 0.0, 0.5)
    q10, q50, q90 = np.clip(np.quantile(log_err, [0.1, 0.5, 0.9]), -_MAX_LOG_BAND, _MAX_LOG_BAND)
    return ErrorQuantiles(len(log_err), float(q10), float(q50), float(q90))


def summarise(predictions: pd.DataFrame) -> dict:
    from perdollar.predict.lab.evaluation import ape_summary

    ref = predictions[predictions["reference"]]
    fb = predictions[~predictions["reference"]]
    return {
        "calibrated_all": ape_summary(predictions["calibrated"], predictions["actual"]),
        "calibrated_reference": ape_summary(ref["calibrated"], ref["actual"]),
        "calibrated_fallback": ape_summary(fb["calibrated"], fb["actual"]),
        "spec_only_reference": ape_summary(ref["spec"], ref["actual"]),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m perdollar.predict.lab.fit",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("data_dir", type=Path, help="folder with accelerator_specs.csv and measurements/")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent.parent / "data" / "params.json")
    parser.add_argument("--no-holdout", action="store_true", help="skip the leave-one-GPU-out evaluation")
    args = parser.parse_args(argv)

    try:
        development = load_development_set(args.data_dir)
    except FileNotFoundError as exc:
        parser.error(str(exc))
    csv_path, cases, pairs = development.csv_path, development.cases, development.pairs
    from perdollar.predict.references import TRACED
    from perdollar.profile.shipped import shipped_profiles, write_profiles

    if TRACED:  # ship the traced reference profiles (beside the default shapes) so validation never traces
        write_profiles({**shipped_profiles(), **TRACED})
    full = fit_model(cases, pairs, DEFAULT_MODEL)
    errors = {}
    summary: dict = {}
    if not args.no_holdout:
        held_out = leave_one_gpu_out(cases, pairs, progress=lambda g: print(f"  held out: {g}", flush=True))
        # A user's workload is traced, so its band comes from the traced reference workloads'
        # errors; the fallback profile's (coarser) errors are kept apart for the published models.
        ref = held_out[held_out["reference"]]
        fallback = held_out[~held_out["reference"]]
        errors["calibrated"] = error_quantiles(ref["calibrated"].to_numpy(), ref["actual"].to_numpy())
        errors["calibrated-fallback"] = error_quantiles(
            fallback["calibrated"].to_numpy(), fallback["actual"].to_numpy()
        )
        errors["spec"] = error_quantiles(ref["spec"].to_numpy(), ref["actual"].to_numpy())
        summary = summarise(held_out)
    digest = hashlib.sha256(csv_path.read_bytes()).hexdigest()[:16]
    provenance = {
        "fitted_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "data": "published_dev.csv (published throughput of others; see its README)",
        "data_sha256_16": digest,
        "rows_used": len(cases.rows),
        "pairs": len(pairs),
        "reference_rows": int(cases.is_reference.sum()),
        # validate may use these parameters as the prior of a refit only for GPUs never among them
        "fitted_accelerators": sorted(set(cases.rows["accelerator_key"])),
        # ... and as they are for target rows of a (source, GPU) they never saw
        "fitted_sources": fitted_sources(cases.rows),
        "method": "robust least squares (soft-L1) on log anchor→target errors, each row weighted "
        "the same whatever its table's GPU count, each anchor under the host floor its GPU's "
        "batch curve shows; bands from "
        "leave-one-GPU-out errors (10th/90th percentiles of log(actual/predicted))",
        "held_out_summary": summary,
    }
    result = ShippedModel(full.params, {**shipped_model().errors, **errors}, full.descriptors, provenance)
    args.out.write_text(json.dumps(params_to_json(result), indent=1, sort_keys=True) + "\n")
    print(json.dumps({"params": asdict(full.params), "held_out": summary}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
