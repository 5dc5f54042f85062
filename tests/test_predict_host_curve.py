"""The host's time read from a GPU's published curve over batch sizes, and its use as a floor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from perdollar import catalog as catalog_mod
from perdollar.predict.calibration import with_host_floor
from perdollar.predict.lab.host_curve import CURVE_COLUMNS, calibrated_step_seconds, fit_host_curves
from perdollar.predict.lab.validate import run_validation

BATCHES = np.array([1, 2, 4, 8, 16, 32, 64, 128], dtype=float)


def curve_rows(step_seconds: np.ndarray, batches: np.ndarray = BATCHES) -> pd.DataFrame:
    rows = pd.DataFrame({column: "same" for column in CURVE_COLUMNS}, index=range(len(batches)))
    rows["per_gpu_batch"] = batches
    rows["per_gpu_throughput"] = batches / step_seconds
    return rows


def test_a_curve_flat_at_small_batches_shows_its_host_time_and_device_scale():
    model = 1e-4 * BATCHES + 2e-4
    host = 5e-3
    curves = fit_host_curves(curve_rows(with_host_floor(2.0 * model, host)), model)
    assert curves.host_seconds == pytest.approx(np.full(len(BATCHES), host), rel=0.05)
    assert curves.scale == pytest.approx(np.full(len(BATCHES), 2.0), rel=0.05)


def test_a_curve_the_device_sets_throughout_shows_no_host():
    model = 1e-4 * BATCHES + 2e-4
    curves = fit_host_curves(curve_rows(1.5 * model), model)
    assert np.all(curves.host_seconds == 0.0)
    assert curves.scale == pytest.approx(np.full(len(BATCHES), 1.5))


def test_two_batch_sizes_are_too_few_to_show_a_host():
    batches = np.array([1.0, 2.0, 1.0])  # a repeated batch size is not a third point
    model = 1e-4 * batches
    curves = fit_host_curves(curve_rows(np.full(3, 5e-3), batches), model)
    assert np.all(curves.host_seconds == 0.0) and np.all(np.isnan(curves.scale))


def test_a_host_bound_anchor_holds_a_faster_gpu_at_its_host_time():
    host = np.array([5e-3])
    step = calibrated_step_seconds(
        anchor_step=np.array([5.2e-3]),
        anchor_model=np.array([1e-3]),
        target_model=np.array([0.25e-3]),
        anchor_host=host,
        curve_scale=np.array([2.0]),
    )
    # The curve's scale stands in for the host-bound anchor's ratio; the host is the floor.
    assert step == pytest.approx(with_host_floor(np.array([0.5e-3]), host))
    assert step[0] >= 5e-3  # the plain ratio would give 5.2 × 0.25 = 1.3 ms


def test_without_a_host_the_calibrated_step_is_the_plain_ratio():
    step = calibrated_step_seconds(
        anchor_step=np.array([8e-3, 3e-3]),
        anchor_model=np.array([2e-3, 1e-3]),
        target_model=np.array([1e-3, 1.5e-3]),
        anchor_host=np.zeros(2),
        curve_scale=np.array([np.nan, 3.0]),
    )
    assert step == pytest.approx(np.array([4e-3, 4.5e-3]))


def _published(path: Path, rows: list[tuple[str, int, float]]) -> Path:
    common = {"source": "bench H", "model": "resnet50", "task": "inference", "gpu_count": 1}
    common |= {"precision": "amp", "batch_scope": "per GPU", "seq_len": "", "unit": "images/s"}
    common |= {"metric": "throughput", "throughput_scope": "per GPU", "notes": "PyTorch=2.1"}
    frame = pd.DataFrame(
        [common | {"gpu": gpu, "batch_size": batch, "throughput": rate} for gpu, batch, rate in rows]
    )
    frame.to_csv(path, index=False)
    return path


def test_validate_holds_a_faster_gpu_at_the_host_rate_its_anchors_curve_shows(tmp_path: Path):
    # The V100's step stays at 4 ms up to batch 8 (the host's pace), then grows with the batch;
    # the A100 in the same harness is host-bound at the same rate at batch 1-4.
    v100_steps = {1: 4e-3, 2: 4e-3, 4: 4e-3, 8: 4.1e-3, 16: 6e-3, 32: 11e-3, 64: 21e-3, 128: 41e-3}
    rows = [("V100-SXM2-16GB", b, b / s) for b, s in v100_steps.items()]
    rows += [("A100-SXM4-80GB", b, b / 4.1e-3) for b in (1, 2, 4)]
    result = run_validation(_published(tmp_path / "h.csv", rows), catalog_mod.load(), ["A100-SXM4-80GB"])
    assert result["calibrated"]["n"] == 3
    # Without the floor the A100 is predicted at the V100's rate times the model's ratio: 31% off.
    assert result["calibrated"]["mean_ape"] < 0.10
