"""Prediction: a workload's throughput on any accelerator, instance and cluster, with its band.

>>> from perdollar import catalog, predict
>>> cat = catalog.load()
>>> p = predict.predict(profile, cat.instance("g5.2xlarge"), cat)
>>> p.samples_per_second, p.basis, p.bottleneck
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import pandas as pd

import perdollar
from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import Accelerator, InstanceType
from perdollar.errors import PerdollarError
from perdollar.predict.calibration import Calibration
from perdollar.predict.frame import PREDICTION_COLUMNS, node_counts, prediction_frame
from perdollar.predict.measured import apply_measured
from perdollar.predict.model import Prediction
from perdollar.predict.step import StepTimeEstimate
from perdollar.predict.step_time import predict_step_time
from perdollar.profile.model import Profile

# `perdollar.predict(...)` in a notebook: the package root's CallableStage says why.
sys.modules[__name__].__class__ = perdollar.CallableStage

__all__ = [
    "PREDICTION_COLUMNS",
    "Calibration",
    "Prediction",
    "StepTimeEstimate",
    "apply_measured",
    "node_counts",
    "predict",
    "predict_frame",
    "predict_step_time",
]


def _accelerators(catalog: Catalog) -> dict[str, Accelerator]:
    return dict(catalog.accelerators)


def predict(
    profile: Profile,
    instance: InstanceType,
    catalog: Catalog,
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
    catalog: Catalog,
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
