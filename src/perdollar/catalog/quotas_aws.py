"""AWS Service Quotas → a GPU quotas file.

EC2's accelerated-instance quotas are counted in vCPUs per instance class ("Running On-Demand P
instances" covers p3, p4d, p5 …), not in GPUs. Each family of the class is given the GPUs of as
many whole machines of its largest size as the vCPU quota holds (``floor(vCPUs ÷ vCPUs per
machine) × GPUs per machine``). The classes share one quota, so each family's figure is the most
it could get if it used the whole quota alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from perdollar.catalog.quotas import Quota, instance_family
from perdollar.errors import PerdollarError

# Quota name → the instance-name prefixes (class letters) it counts.
ON_DEMAND_CLASSES: dict[str, tuple[str, ...]] = {
    "Running On-Demand P instances": ("p",),
    "Running On-Demand G and VT instances": ("g", "vt"),
    "Running On-Demand DL instances": ("dl",),
    "Running On-Demand Inf instances": ("inf",),
    "Running On-Demand Trn instances": ("trn",),
}

ClientFactory = Callable[[str], Any]  # region → service-quotas client


def default_client(region: str) -> Any:
    try:
        import boto3
    except ImportError:
        raise PerdollarError(
            "reading AWS Service Quotas needs boto3", "pip install boto3 (and configure AWS credentials)"
        ) from None
    return boto3.client("service-quotas", region_name=region)


def ec2_quotas(client: Any) -> dict[str, float]:
    """The EC2 on-demand accelerated-instance quotas of one region: quota name → vCPUs."""
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    values: dict[str, float] = {}
    try:
        for page in client.get_paginator("list_service_quotas").paginate(ServiceCode="ec2"):
            for quota in page.get("Quotas", ()):
                if quota.get("QuotaName") in ON_DEMAND_CLASSES:
                    values[quota["QuotaName"]] = float(quota.get("Value", 0.0))
    except NoCredentialsError:
        message, fix = "no AWS credentials for Service Quotas", "configure them: aws configure"
        raise PerdollarError(message, fix) from None
    except (BotoCoreError, ClientError) as error:
        message, fix = f"AWS Service Quotas failed: {error}", "check the region and permissions"
        raise PerdollarError(message, fix) from None
    return values


def _class_of(family: str) -> str | None:
    """The quota class of an AWS family (``p5`` → P, ``g6e`` → G and VT, ``trn1`` → Trn)."""
    for name, prefixes in ON_DEMAND_CLASSES.items():
        # the longest prefix wins: "dl1" is DL, not a G
        for prefix in sorted(prefixes, key=len, reverse=True):
            if family.startswith(prefix) and family[len(prefix) : len(prefix) + 1].isdigit():
                return name
    return None


def family_sizes(instances: pd.DataFrame) -> dict[str, tuple[tuple[float, float], ...]]:
    """AWS family → (vCPUs, GPUs) of each of its sizes with accelerators."""
    aws = instances[(instances["cloud"] == "aws") & (instances["accelerator_count"] >= 1)]
    sizes: dict[str, list[tuple[float, float]]] = {}
    for name, vcpus, gpus in zip(aws["instance_type"], aws["vcpus"], aws["accelerator_count"], strict=True):
        sizes.setdefault(instance_family("aws", str(name)), []).append((float(vcpus), float(gpus)))
    return {family: tuple(found) for family, found in sizes.items()}


def gpus_within(vcpu_quota: float, sizes: tuple[tuple[float, float], ...]) -> float:
    """The most GPUs whole machines of one size hold within ``vcpu_quota`` vCPUs."""
    return max((math.floor(vcpu_quota / vcpus) * gpus for vcpus, gpus in sizes if vcpus > 0), default=0.0)


def gpu_quotas(
    region: str, vcpu_quotas: dict[str, float], sizes: dict[str, tuple[tuple[float, float], ...]]
) -> tuple[Quota, ...]:
    """One quota per family of every class the region has a vCPU quota for."""
    quotas = []
    for family, family_sizes_ in sorted(sizes.items()):
        name = _class_of(family)
        if name is None or name not in vcpu_quotas:
            continue
        gpus = gpus_within(vcpu_quotas[name], family_sizes_)
        quotas.append(Quota(cloud="aws", region=region, family=family, gpus=gpus))
    return tuple(quotas)


def aws_gpu_quotas(
    regions: Iterable[str], instances: pd.DataFrame, client_for: ClientFactory = default_client
) -> tuple[Quota, ...]:
    """GPU quotas of every family in ``regions`` from AWS Service Quotas."""
    sizes = family_sizes(instances)
    found: list[Quota] = []
    for region in regions:
        found += gpu_quotas(region, ec2_quotas(client_for(region)), sizes)
    return tuple(found)
