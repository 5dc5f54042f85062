"""Serving prediction: latency versus batch on each accelerator, queueing, and the replica plan.

Per accelerator a latency-vs-batch curve (predicted from the forward-only profile, replaced by a
local measurement where the hardware is the same); :func:`plan_accelerator` then picks the batch
size, batching wait and replica count that serve a rate within the SLO (closed-form queueing in
:mod:`perdollar.predict.network_serving.queueing`). Pricing the plans is
:mod:`perdollar.price.network_serving`.
"""

from perdollar.predict.network_serving.curves import (
    cpu_curve,
    measured_curves,
    predict_service_curves,
    unsupported_reason,
)
from perdollar.predict.network_serving.plans import (
    CPU_KEY,
    DEFAULT_BATCH_SIZES,
    DEFAULT_HEADROOM,
    AcceleratorPlan,
    ServiceCurve,
    ServingTarget,
    plan_accelerator,
    plan_all,
)

__all__ = [
    "CPU_KEY",
    "DEFAULT_BATCH_SIZES",
    "DEFAULT_HEADROOM",
    "AcceleratorPlan",
    "ServiceCurve",
    "ServingTarget",
    "cpu_curve",
    "measured_curves",
    "plan_accelerator",
    "plan_all",
    "predict_service_curves",
    "unsupported_reason",
]
