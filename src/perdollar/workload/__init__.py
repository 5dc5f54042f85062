"""Workloads: the spec, the built-in references, loading user workloads, and one step of each."""

from perdollar.workload.loader import canonical_spec, load_workload, reference_names
from perdollar.workload.published import reference_for_published_model
from perdollar.workload.spec import OPTIMIZERS, PRECISIONS, Workload

__all__ = [
    "OPTIMIZERS",
    "PRECISIONS",
    "Workload",
    "canonical_spec",
    "load_workload",
    "reference_for_published_model",
    "reference_names",
]
