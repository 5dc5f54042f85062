"""The host's time per step, read from one GPU's published figures at several batch sizes.

``perdollar bench`` times the host's dispatch of a step on the user's own runs; published rows
carry no such figure. A GPU's rows for one workload across batch sizes still show it: while the
host sets the pace the step time stays flat as the batch grows, then rises with the device's
work. Fitting step ≈ soft max(scale × model time, host) over that curve (the same soft maximum
that calibration puts a measured host time into) gives the host's time, which an anchor then
carries like a measured one: taken out of its step before the ratio is formed, and put back as
the floor of the GPU it predicts. The target's host is taken to be as fast as the anchor's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from perdollar.predict.calibration import device_seconds_of_steps, with_host_floor
from perdollar.predict.lab.evaluation import batch_sizes

# A row's curve: everything of its pairing key but the batch, on one GPU.
CURVE_COLUMNS = ["source_id", "era", "model", "task", "precision", "seq", "unit", "metric", "gpu"]
# Two points fit any floor and scale exactly; a third is the first that can disagree.
MIN_BATCH_SIZES = 3
_HOST_GRID = np.linspace(0.0, 1.0, 51)  # × the curve's shortest step
_LOG_SCALE_GRID = np.linspace(-2.0, 2.0, 81)  # around the curve's median log(step / model)


@dataclass(frozen=True)
class HostCurves:
    """Per row: the host seconds its GPU's curve shows (0: none) and the curve's device scale."""

    host_seconds: np.ndarray
    scale: np.ndarray  # measured device time / model time over the curve; NaN without a curve


def fit_host_curves(rows: pd.DataFrame, model_seconds: np.ndarray) -> HostCurves:
    """Least squares in log step time over a grid of host times and scales, curve by curve."""
    host = np.zeros(len(rows))
    scale = np.full(len(rows), np.nan)
    batch = batch_sizes(rows)
    step = batch / rows["per_gpu_throughput"].to_numpy(dtype=float)
    curve = rows[CURVE_COLUMNS].astype(str).agg("¦".join, axis=1)
    for index in curve.groupby(curve).indices.values():
        measured, model = step[index], model_seconds[index]
        if len(set(batch[index])) < MIN_BATCH_SIZES or not np.all(np.isfinite(model) & (model > 0)):
            continue
        hosts = measured.min() * _HOST_GRID
        scales = np.exp(np.median(np.log(measured / model)) + _LOG_SCALE_GRID)
        predicted = with_host_floor(scales[None, :, None] * model, hosts[:, None, None])
        cost = np.mean((np.log(predicted) - np.log(measured)) ** 2, axis=2)
        best_host, best_scale = np.unravel_index(np.argmin(cost), cost.shape)
        host[index], scale[index] = hosts[best_host], scales[best_scale]
    return HostCurves(host, scale)


def calibrated_step_seconds(
    anchor_step: np.ndarray,
    anchor_model: np.ndarray,
    target_model: np.ndarray,
    anchor_host: np.ndarray,
    curve_scale: np.ndarray,
) -> np.ndarray:
    """Target step seconds from anchors' measured steps, under the anchors' host floors.

    An anchor that its host bounds says nothing of its device at that batch: its curve's scale
    stands in for the ratio (1, the model as it is, where it has no curve).
    """
    device = device_seconds_of_steps(anchor_step, anchor_host)
    fallback_scale = np.where(np.isfinite(curve_scale), curve_scale, 1.0)
    ratio = np.where(np.isnan(device), fallback_scale, device / anchor_model)
    return with_host_floor(ratio * target_model, anchor_host)
