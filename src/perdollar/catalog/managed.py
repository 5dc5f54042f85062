"""Managed ML services (SageMaker, Vertex AI, Azure Machine Learning) priced as they bill.

A service bills its own rate for the machines it offers: the bundled ``managed_services.csv``
gives, per service, instance pattern and use (training or inference), the published surcharge
over the cloud's own VM rate with the reference rates it was read from, dated and sourced. A
service's market is the on-demand offers of the instances it offers, each at VM rate × (1 +
surcharge); spot and committed terms of the VM do not apply to it.
"""

from __future__ import annotations

import csv
import datetime as dt
import fnmatch
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

from perdollar.errors import PerdollarError

SERVICES_FILE = Path(__file__).with_name("managed_services.csv")
SERVICES = ("sagemaker", "vertex", "azureml")
USES = ("training", "inference")
MANAGED_FLAG = "priced-as-managed-service"
MANAGED_FLAG_MEANING = (
    "Priced at the managed service's rate (VM rate × (1 + the published surcharge)); rates, "
    "references, sources and dates: managed_services.csv."
)
# The service's own name for a machine, from the VM's: SageMaker prefixes "ml.".
_NAME_PREFIX = {"sagemaker": "ml."}


@dataclass(frozen=True, slots=True)
class ServiceRate:
    service: str
    cloud: str
    instance_pattern: str
    use: str
    surcharge_vs_vm: float
    confidence: str
    reference: str
    source: str
    as_of: dt.date

    def matches(self, cloud: str, instance_type: str, use: str) -> bool:
        return (
            cloud.lower() == self.cloud
            and use == self.use
            and fnmatch.fnmatch(instance_type.lower(), self.instance_pattern)
        )


def read_rates(path: Path) -> tuple[ServiceRate, ...]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    rates = []
    for number, row in enumerate(rows, start=2):
        try:
            rates.append(
                ServiceRate(
                    service=row["service"],
                    cloud=row["cloud"],
                    instance_pattern=row["instance_pattern"].lower(),
                    use=row["use"],
                    surcharge_vs_vm=float(row["surcharge_vs_vm"]),
                    confidence=row["confidence"],
                    reference=row["reference"],
                    source=row["source"],
                    as_of=dt.date.fromisoformat(row["as_of"]),
                )
            )
        except (KeyError, ValueError) as error:
            raise PerdollarError(
                f"{path}: row {number} is not a service rate ({error})", "fix the row"
            ) from None
    return tuple(rates)


@cache
def bundled_rates() -> tuple[ServiceRate, ...]:
    return read_rates(SERVICES_FILE)


def check_service(service: str) -> str:
    name = service.strip().lower()
    if name not in SERVICES:
        raise PerdollarError(f"--service {service!r} is not a managed service perdollar prices",
                             f"use one of {', '.join(SERVICES)}")  # fmt: skip
    return name


def rate_for(
    service: str, cloud: str, instance_type: str, use: str, rates: tuple[ServiceRate, ...] | None = None
) -> ServiceRate | None:
    """The service's rate for the machine, or None where the service does not offer it."""
    rates = bundled_rates() if rates is None else rates
    return next((r for r in rates if r.service == service and r.matches(cloud, instance_type, use)), None)


def service_instance_name(service: str, instance_type: str) -> str:
    return _NAME_PREFIX.get(service, "") + instance_type


def managed_offers(
    offers: pd.DataFrame, service: str, use: str, rates: tuple[ServiceRate, ...] | None = None
) -> pd.DataFrame:
    """The service's market: the on-demand offers of the machines it offers, at its rate."""
    service = check_service(service)
    on_demand = offers[offers["market"] == "on-demand"]
    pairs = on_demand[["cloud", "instance_type"]].drop_duplicates().itertuples(index=False)
    found = {(c, i): rate_for(service, str(c), str(i), use, rates) for c, i in pairs}
    chosen = [found[(c, i)] for c, i in zip(on_demand["cloud"], on_demand["instance_type"], strict=True)]
    keep = [r is not None for r in chosen]
    rows = on_demand.loc[keep].copy()
    kept = [r for r in chosen if r is not None]
    rows["vm_price_per_hour"] = rows["price_per_hour"].to_numpy(dtype=float)
    rows["price_per_hour"] = [
        p * (1.0 + r.surcharge_vs_vm) for p, r in zip(rows["vm_price_per_hour"], kept, strict=True)
    ]
    rows["price_basis"] = [
        f"{service} {use}: VM × {1 + r.surcharge_vs_vm:.3g} ({r.reference}; {r.source}, {r.as_of})"
        for r in kept
    ]
    rows["captured_at"] = [min(_date(c), r.as_of) for c, r in zip(rows["captured_at"], kept, strict=True)]
    rows["flags"] = [(*(f if isinstance(f, tuple | list) else ()), MANAGED_FLAG) for f in rows["flags"]]
    return rows.reset_index(drop=True)


def _date(value: object) -> dt.date:
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])
