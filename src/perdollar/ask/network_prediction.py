"""One workload on one instance: ``perdollar predict`` and ``perdollar.predict(...)`` for networks.

Language models have their own forms (:mod:`perdollar.ask.llm_prediction` for training,
:mod:`perdollar.ask.llm_serving_prediction` for serving); the command picks by the
family :mod:`perdollar.ask.questions` decided.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perdollar.catalog import load as load_catalog
from perdollar.catalog.model import InstanceType
from perdollar.measure.result import Measurement
from perdollar.predict import Calibration
from perdollar.predict import predict as predict_on_instance
from perdollar.predict.model import Prediction
from perdollar.profile.model import Profile
from perdollar.workload import Workload


@dataclass(frozen=True)
class NetworkPrediction:
    """A network's prediction on an instance, with the profile and anchors it rests on."""

    name: str
    profile: Profile
    instance: InstanceType
    prediction: Prediction
    calibration_anchors: tuple[object, ...]


def predict_network(
    workload: str | Workload,
    instance: str,
    *,
    nodes: int = 1,
    cloud: str | None = None,
    batch_size: int | None = None,
    precision: str | None = None,
    measurements: Sequence[Measurement] = (),
    store_url: str | None = None,
    use_store: bool = False,
    data_bytes_per_sample: float | None = None,
    input_rate_per_core: float | None = None,
    progress: Callable[[str], None] = lambda message: None,
    note: Callable[[str], None] = lambda message: None,
) -> NetworkPrediction:
    """Trace ``workload``, calibrate from the given (and, with ``use_store``, stored) measurements,
    and predict it on ``nodes`` × ``instance``. An unreachable store only costs calibration: ``note``
    says so."""
    from perdollar.ask.inputs import stored_measurements
    from perdollar.errors import PerdollarError
    from perdollar.profile.profiler import load_to_profile, profile_workload

    catalog = load_catalog()
    target = catalog.instance(instance, cloud=cloud)
    spec = load_to_profile(workload, batch_size=batch_size, precision=precision)
    progress(f"tracing {spec.name}")
    profile = profile_workload(spec)
    found = list(measurements)
    if use_store:
        try:
            found += stored_measurements(profile.workload_fingerprint, store_url)
        except PerdollarError:
            raise
        except Exception as error:  # an unreachable store only loses calibration, not the prediction
            note(f"note: stored measurements unavailable ({error})")
    calibration = Calibration.from_measurements(profile, found, catalog) if found else None
    result = predict_on_instance(
        profile, target, catalog, nodes=nodes, calibration=calibration,
        data_bytes_per_sample=data_bytes_per_sample, input_rate_per_core=input_rate_per_core,
    )  # fmt: skip
    anchors = tuple(calibration.anchors) if calibration else ()
    return NetworkPrediction(spec.name, profile, target, result, anchors)
