"""One device's step time for one accelerator: the roofline, or the calibration where there is one."""

from __future__ import annotations

from perdollar.catalog.model import Accelerator
from perdollar.predict.calibration import Calibration
from perdollar.predict.step import StepTimeEstimate, band_seconds, device_steps
from perdollar.profile.model import Profile
from perdollar.vocabulary import Basis


def predict_step_time(
    profile: Profile, accelerator: Accelerator, calibration: Calibration | None = None
) -> StepTimeEstimate:
    """One device's step time (for inference: one forward pass at the profile's batch)."""
    steps = device_steps(profile, [accelerator])
    seconds = device = float(steps.seconds[0])  # device: the kernels' share of the step
    basis: Basis = "spec"
    host_bound = False
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
