"""The cheapest deployment that serves a request rate within a latency SLO, on every cloud.

Per accelerator: a latency-vs-batch curve (predicted from the forward-only profile, replaced by
the local measurement where the hardware is the same), then :func:`plan_replicas` picks the
batch size, batching wait and replica count (closed-form queueing, see
:mod:`perdollar.select.queueing`). Per offer: replicas are packed one per accelerator, priced, and
spot offers get extra instances for interruptions. Plans are computed once per distinct
accelerator (and device fraction), never per offer.
"""

from perdollar.select.serving.answer import (
    ServingAnswer,
    answer_serving,
    deployment_estimates,
    explain_serving,
    recommend_serving,
)
from perdollar.select.serving.curves import predict_service_curves
from perdollar.select.serving.deployments import (
    cpu_curve,
    filter_offers,
    plan_all,
    price_deployments,
    serving_mode_hint,
)
from perdollar.select.serving.plans import (
    CPU_KEY,
    DEFAULT_BATCH_SIZES,
    DEFAULT_HEADROOM,
    AcceleratorPlan,
    ServiceCurve,
    ServingTarget,
    plan_accelerator,
    spot_extra_instances,
)

__all__ = [
    "CPU_KEY",
    "DEFAULT_BATCH_SIZES",
    "DEFAULT_HEADROOM",
    "AcceleratorPlan",
    "ServiceCurve",
    "ServingAnswer",
    "ServingTarget",
    "answer_serving",
    "cpu_curve",
    "deployment_estimates",
    "explain_serving",
    "filter_offers",
    "plan_accelerator",
    "plan_all",
    "predict_service_curves",
    "price_deployments",
    "recommend_serving",
    "serving_mode_hint",
    "spot_extra_instances",
]
