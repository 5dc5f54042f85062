"""A measurement of this workload on an instance type replaces the prediction there."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from perdollar.measure.result import Measurement
from perdollar.predict.calibration import same_workload
from perdollar.profile.model import Profile

_RATE_COLUMNS = ["samples_per_second", "samples_per_second_low", "samples_per_second_high"]


def apply_measured(
    predictions: pd.DataFrame, profile: Profile, measurements: Sequence[Measurement]
) -> pd.DataFrame:
    """Rows of a prediction frame on a measured instance type (one node) take the measured rate.

    A measured figure always wins over a predicted one; on several nodes the measurement only
    anchors the calibration, so those rows stay predicted.
    """
    usable = [m for m in measurements if m.ok and m.samples_per_second and same_workload(profile, m)]
    if not usable:
        return predictions
    frame = predictions.copy()
    for measurement in usable:
        rate = measurement.samples_per_second
        instance = measurement.host.instance_type or ""
        if rate is None or instance in ("", "unknown"):
            continue
        match = (frame["instance_type"] == instance.removeprefix("ml.")) & (frame["nodes"] == 1)
        if measurement.host.cloud:
            match &= frame["cloud"] == measurement.host.cloud
        if not match.any():
            continue
        frame.loc[match, _RATE_COLUMNS] = (rate.median, rate.low, rate.high)
        frame.loc[match, "basis"] = "measured"
    return frame
