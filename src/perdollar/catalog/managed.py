"""Managed ML services (SageMaker, Vertex AI, Azure Machine Learning) priced as they bill.

A service bills its own rate for the machines it offers: the bundled ``managed_services.csv``
gives, per service, instance pattern and use (training or inference), the published surcharge
over the cloud's own VM rate with the reference rates it was read from, dated and sourced. A
service's market is the on-demand offers of the instances it offers, each at VM rate × (1 +
surcharge); committed terms of the VM do not apply to it.

SageMaker's managed spot training is the one managed spot market: it bills the ``ml.`` rate for
billable seconds, which the spot discount of the underlying capacity shortens ("Managed Spot
Training", SageMaker developer guide: savings = 1 − billable ÷ training seconds). Its price per
hour of training is therefore estimated as the ``ml.`` rate × (the VM's spot ÷ on-demand price in
the same region), flagged as an estimate.
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
MANAGED_SPOT_FLAG = "managed-spot-estimated-from-vm-spot"
MANAGED_SPOT_FLAG_MEANING = (
    "SageMaker managed spot training: the ml. rate × the VM's spot discount in that region (SageMaker bills "
    "billable seconds, shortened by the spot discount); an estimate, not a published rate."
)
MANAGED_SPOT_SOURCE = "https://docs.aws.amazon.com/sagemaker/latest/dg/model-managed-spot-training.html"
# Services with a spot market of their own, and for which use.
MANAGED_SPOT = {("sagemaker", "training")}
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


def has_managed_spot(service: str, use: str) -> bool:
    return (check_service(service), use) in MANAGED_SPOT


def managed_offers(
    offers: pd.DataFrame, service: str, use: str, rates: tuple[ServiceRate, ...] | None = None
) -> pd.DataFrame:
    """The service's markets: the on-demand offers of the machines it offers, at its rate, and
    where the service has one (SageMaker training), its managed spot market."""
    on_demand = _on_demand_managed(offers, check_service(service), use, rates)
    if not has_managed_spot(service, use) or on_demand.empty:
        return on_demand
    return pd.concat([on_demand, _managed_spot(offers, on_demand)], ignore_index=True)


def _managed_spot(offers: pd.DataFrame, on_demand: pd.DataFrame) -> pd.DataFrame:
    """The managed on-demand rows again as spot: each at its rate × the VM's spot discount."""
    keys = ["cloud", "instance_type", "region"]
    spot = offers[(offers["market"] == "spot") & (offers["price_per_hour"] > 0)]
    spot = spot[[*keys, "price_per_hour", "captured_at", "interruption_bucket", "flags"]].rename(
        columns={"price_per_hour": "spot_vm", "captured_at": "spot_captured_at", "flags": "spot_flags",
                 "interruption_bucket": "spot_bucket"}
    )  # fmt: skip
    rows = on_demand.merge(spot.drop_duplicates(keys), on=keys, how="inner")
    if rows.empty:
        return rows.drop(columns=["spot_vm", "spot_captured_at", "spot_flags", "spot_bucket"])
    discount = rows["spot_vm"].to_numpy(dtype=float) / rows["vm_price_per_hour"].to_numpy(dtype=float)
    rows["price_per_hour"] = rows["price_per_hour"].to_numpy(dtype=float) * discount
    rows["vm_price_per_hour"] = rows["spot_vm"]
    rows["market"] = "spot"
    rows["interruption_bucket"] = rows["spot_bucket"]
    dates = zip(rows["captured_at"], rows["spot_captured_at"], strict=True)
    rows["captured_at"] = [min(_date(a), _date(b)) for a, b in dates]
    rows["price_basis"] = [
        f"{basis}; managed spot: × the VM's spot discount {1 - d:.0%} ({MANAGED_SPOT_SOURCE})"
        for basis, d in zip(rows["price_basis"], discount, strict=True)
    ]
    rows["flags"] = [
        (*_flags(f), *(g for g in _flags(spot_flags) if g not in _flags(f)), MANAGED_SPOT_FLAG)
        for f, spot_flags in zip(rows["flags"], rows["spot_flags"], strict=True)
    ]
    return rows.drop(columns=["spot_vm", "spot_captured_at", "spot_flags", "spot_bucket"])


def _on_demand_managed(
    offers: pd.DataFrame, service: str, use: str, rates: tuple[ServiceRate, ...] | None
) -> pd.DataFrame:
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


def _flags(value: object) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, tuple | list) else ()
