"""Prediction: a workload's throughput on any accelerator, instance and cluster, with its band.

>>> from perdollar import catalog, predict
>>> cat = catalog.load()
>>> p = predict.predict(profile, cat.instance("g5.2xlarge"), cat)
>>> p.samples_per_second, p.basis, p.bottleneck
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from perdollar.catalog.model import Accelerator, InstanceType
from perdollar.errors import PerdollarError
from perdollar.predict.calibration import Calibration
from perdollar.predict.frame import prediction_frame
from perdollar.predict.model import Prediction
from perdollar.predict.step import StepTimeEstimate, band_seconds, device_steps
from perdollar.profile.model import Profile

__all__ = ["Calibration", "Prediction", "StepTimeEstimate", "predict", "predict_frame", "predict_step_time"]


def _accelerators(catalog: Any) -> dict[str, Accelerator]:
    return dict(catalog.accelerators)


def predict(
    profile: Profile,
    instance: InstanceType,
    catalog: Any,
    *,
    nodes: int = 1,
    calibration: Calibration | None = None,
    data_bytes_per_sample: float | None = None,
    input_rate_per_core: float | None = None,
) -> Prediction:
    """Throughput of ``profile`` on ``nodes`` × ``instance`` (data parallel), with band, basis, bottleneck."""
    if nodes < 1:
        raise PerdollarError(f"--nodes must be at least 1 (got {nodes})", "pass --nodes 1 or more")
    frame = prediction_frame(
        profile,
        [instance],
        _accelerators(catalog),
        [nodes],
        calibration=calibration,
        data_bytes_per_sample=data_bytes_per_sample,
        input_rate_per_core=input_rate_per_core,
    )
    row = frame.iloc[0].to_dict()
    row.pop("cloud", None)
    row["max_batch_that_fits"] = (
        None if pd.isna(row["max_batch_that_fits"]) else int(row["max_batch_that_fits"])
    )
    row["accelerator_key"] = row["accelerator_key"] if isinstance(row["accelerator_key"], str) else None
    row["nodes"] = int(row["nodes"])
    row["fits"] = bool(row["fits"])
    return Prediction(**row)


def predict_frame(
    profile: Profile,
    catalog: Any,
    node_counts: Iterable[int] = (1,),
    calibration: Calibration | None = None,
    *,
    data_bytes_per_sample: float | None = None,
    input_rate_per_core: float | None = None,
) -> pd.DataFrame:
    """Every instance type of the catalog × every node count, in one vectorised pass."""
    instances = list(catalog.instance_types.values())
    return prediction_frame(
        profile,
        instances,
        _accelerators(catalog),
        node_counts,
        calibration=calibration,
        data_bytes_per_sample=data_bytes_per_sample,
        input_rate_per_core=input_rate_per_core,
    )


def predict_step_time(
    profile: Profile, accelerator: Accelerator, calibration: Calibration | None = None
) -> StepTimeEstimate:
    """One device's step time (for inference: one forward pass at the profile's batch)."""
    steps = device_steps(profile, [accelerator])
    seconds = device = float(steps.seconds[0])  # device: the kernels' share of the step
    basis, host_bound = "spec", False
    if calibration is not None and calibration.has_device_anchor:
        measured = calibration.measured_samples_per_second.get(accelerator.key)
        if measured:
            seconds = device = profile.batch_size / measured
            basis, host_bound = "measured", bool(calibration.host_bounds(seconds))
        else:
            kernels, step, bound = calibration.device_and_step_seconds(steps.seconds, steps.memory_share)
            device, seconds, host_bound = float(kernels[0]), float(step[0]), bool(bound[0])
            basis = "calibrated"
    low, high = band_seconds(seconds, basis, accelerator.software_stack)
    breakdown, bottleneck = steps.rescaled(0, device, seconds, host_bound)
    scale = device / max(float(steps.seconds[0]), 1e-30)
    return StepTimeEstimate(
        seconds=seconds,
        low=low,
        high=high,
        basis=basis,
        bottleneck=bottleneck,
        breakdown=breakdown,
        backward_seconds=float(steps.backward[0]) * scale,
    )
