"""Refresh AWS prices and specs from AWS's own APIs into a new catalog snapshot.

* On-demand Linux prices: Price List API ``GetProducts`` (service ``AmazonEC2``).
* Current spot prices: EC2 ``DescribeSpotPriceHistory`` from now (one price per zone; the
  snapshot keeps the lowest and highest zone).
* Specs: EC2 ``DescribeInstanceTypes`` (vCPUs, memory, GPUs or Neuron devices, network, EFA).

Interruption buckets come from the Spot Instance Advisor, which has no authenticated API; the
previous snapshot's bucket for the same type and region is kept and flagged as such.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import shutil
import statistics
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.model import InstanceType, Offer
from perdollar.catalog.snapshot_write import catalog_frames, check_loads, write_snapshot
from perdollar.errors import PerdollarError

ClientFactory = Callable[[str, str], Any]  # (service, region) → boto3 client

PRICING_ENDPOINT_REGION = "us-east-1"  # the Price List API answers from a few regions only
CARRIED_BUCKET_FLAG = "interruption-bucket-from-previous-snapshot"


# us-east-1, ap-southeast-4, us-gov-west-1, eu-isoe-west-1: what AWS's region names look like.
_REGION_NAME = re.compile(r"[a-z]{2}(-[a-z]+)+-\d+")


def check_region_names(regions: Iterable[str], known: Iterable[str]) -> None:
    """Refuse a malformed region name in one line, before any client is made for it."""
    for region in regions:
        if not _REGION_NAME.fullmatch(region):
            names = sorted(known)
            shown = ", ".join(names[:4]) + (f" … ({len(names)} in the catalog)" if len(names) > 4 else "")
            raise PerdollarError(
                f"--region {region!r} is not an AWS region name",
                f"give names such as {shown or 'us-east-1'}",
            )


def default_client_factory(service: str, region: str) -> Any:
    import boto3

    return boto3.client(service, region_name=region)


def _api_error(error: Exception, what: str) -> PerdollarError:
    from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

    if isinstance(error, NoCredentialsError):
        return PerdollarError(
            "no AWS credentials found for catalog refresh",
            "configure them (aws configure, AWS_PROFILE or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
        )
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "error")
        message = error.response.get("Error", {}).get("Message", "")
        return PerdollarError(
            f"AWS {what} failed: {code} {message}".strip(), "check the region and permissions"
        )
    if isinstance(error, BotoCoreError):
        return PerdollarError(f"AWS {what} failed: {error}", "check your network and AWS configuration")
    raise error


def _pages(client: Any, operation: str, result_key: str, **params: Any) -> Iterable[Any]:
    paginator = client.get_paginator(operation)
    for page in paginator.paginate(**params):
        yield from page.get(result_key, [])


# ---- parsing the API answers --------------------------------------------------------------------
def parse_on_demand_prices(price_list: Iterable[str]) -> dict[str, float]:
    """Price List ``GetProducts`` items (JSON strings) → {instance type: USD per hour}."""
    prices: dict[str, float] = {}
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        attributes = product.get("product", {}).get("attributes", {})
        name = attributes.get("instanceType")
        if not name:
            continue
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                if dimension.get("unit", "Hrs") not in ("Hrs", "Hours"):
                    continue
                usd = float(dimension.get("pricePerUnit", {}).get("USD", "nan"))
                if math.isfinite(usd) and usd > 0:
                    prices[name] = min(usd, prices.get(name, math.inf))
    return prices


def parse_spot_prices(history: Iterable[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """``SpotPriceHistory`` entries → {instance type: (zones' median, lowest, highest)}, newest per zone."""
    latest: dict[tuple[str, str], tuple[dt.datetime, float]] = {}
    for entry in history:
        key = (entry["InstanceType"], entry.get("AvailabilityZone", ""))
        stamp = entry.get("Timestamp") or dt.datetime.min.replace(tzinfo=dt.UTC)
        if key not in latest or stamp > latest[key][0]:
            latest[key] = (stamp, float(entry["SpotPrice"]))
    by_type: dict[str, list[float]] = {}
    for (name, _zone), (_stamp, price) in latest.items():
        by_type.setdefault(name, []).append(price)
    return {name: (statistics.median(p), min(p), max(p)) for name, p in by_type.items()}


def _network_gbps(info: dict[str, Any]) -> float | None:
    cards = info.get("NetworkCards") or []
    baseline = sum(float(c.get("BaselineBandwidthInGbps") or 0) for c in cards)
    if baseline:
        return baseline
    match = re.search(r"([\d.]+)\s*Gigabit", info.get("NetworkPerformance", ""))
    return float(match.group(1)) if match else None


def instance_from_api(item: dict[str, Any], catalog: Catalog) -> InstanceType | None:
    """One ``InstanceTypeInfo`` → InstanceType; None when its accelerator is unknown to the catalog."""
    name = item["InstanceType"]
    arch = (item.get("ProcessorInfo", {}).get("SupportedArchitectures") or ["x86_64"])[0]
    gpus = item.get("GpuInfo", {}).get("Gpus") or []
    neurons = item.get("NeuronInfo", {}).get("NeuronDevices") or []
    known = catalog.instance_types.get(("aws", name))
    chip_name, count, memory_mib = None, 0.0, 0.0
    if gpus:
        chip_name = gpus[0].get("Name")
        count = float(sum(g.get("Count", 0) for g in gpus))
        memory_mib = float(item["GpuInfo"].get("TotalGpuMemoryInMiB") or 0)
    elif neurons:
        chip_name = neurons[0].get("Name")
        count = float(sum(n.get("Count", 0) for n in neurons))
        memory_mib = float(item["NeuronInfo"].get("TotalNeuronDeviceMemoryInMiB") or 0)
    key = None
    if chip_name:
        if known is not None and known.accelerator_key:
            key = known.accelerator_key  # the curated mapping (e.g. A100 40 vs 80 GB) wins
        else:
            try:
                key = catalog.accelerator(chip_name).key
            except PerdollarError:
                return None
    network = item.get("NetworkInfo", {})
    storage = item.get("InstanceStorageInfo", {}).get("TotalSizeInGB")
    return InstanceType(
        cloud="aws",
        name=name,
        vcpus=float(item.get("VCpuInfo", {}).get("DefaultVCpus", math.nan)),
        memory_gib=float(item.get("MemoryInfo", {}).get("SizeInMiB", math.nan)) / 1024,
        arch={"x86_64": "amd64", "x86_64_mac": "amd64", "arm64_mac": "arm64"}.get(arch, arch),
        accelerator_name=(known.accelerator_name if known and known.accelerator_name else chip_name),
        accelerator_key=key,
        accelerator_count=count,
        accelerator_memory_gib_total=memory_mib / 1024,
        network_gbps=_network_gbps(network),
        efa_interfaces=int(network.get("EfaInfo", {}).get("MaximumEfaInterfaces", 0) or 0),
        local_disk_gb=float(storage) if storage else None,
        name_parts=known.name_parts if known else None,
    )


# ---- the refresh ----------------------------------------------------------------------------------
def _fetch_region(
    region: str, catalog: Catalog, clients: ClientFactory, today: dt.date
) -> tuple[dict[str, InstanceType], list[Offer]]:
    ec2 = clients("ec2", region)
    pricing = clients("pricing", PRICING_ENDPOINT_REGION)
    try:
        specs = list(_pages(ec2, "describe_instance_types", "InstanceTypes"))
        filters = [
            {"Type": "TERM_MATCH", "Field": field, "Value": value}
            for field, value in (
                ("regionCode", region), ("operatingSystem", "Linux"), ("tenancy", "Shared"),
                ("preInstalledSw", "NA"), ("capacitystatus", "Used"),
            )
        ]  # fmt: skip
        on_demand = parse_on_demand_prices(
            _pages(pricing, "get_products", "PriceList", ServiceCode="AmazonEC2", Filters=filters)
        )
        spot = parse_spot_prices(
            _pages(
                ec2, "describe_spot_price_history", "SpotPriceHistory",
                StartTime=dt.datetime.now(dt.UTC), ProductDescriptions=["Linux/UNIX"],
            )
        )  # fmt: skip
    except Exception as error:  # botocore raises many types; _api_error keeps the unknown ones
        raise _api_error(error, f"price/spec query in {region}") from error

    # Keep accelerator instance types and the CPU types the catalog already lists.
    types: dict[str, InstanceType] = {}
    for item in specs:
        instance = instance_from_api(item, catalog)
        if instance is None:
            continue
        if instance.accelerator_count or ("aws", instance.name) in catalog.instance_types:
            types[instance.name] = instance
    previous_buckets = {
        o.instance_type: o.interruption_bucket
        for o in catalog.offers
        if o.cloud == "aws" and o.region == region and o.market == "spot" and o.interruption_bucket
    }
    offers: list[Offer] = []
    for name in sorted(types):
        if name not in on_demand and name not in spot:
            continue
        if name in on_demand:
            offers.append(
                Offer(
                    "aws", name, region, "on-demand", on_demand[name], today, price_basis="aws_price_list_api"
                )
            )
        if name in spot:
            median, low, high = spot[name]
            bucket = previous_buckets.get(name)
            offers.append(
                Offer(
                    "aws", name, region, "spot", median, today, price_max_per_hour=high,
                    price_basis="aws_describe_spot_price_history_median_over_azs", interruption_bucket=bucket,
                    flags=(CARRIED_BUCKET_FLAG,) if bucket else (), price_min_per_hour=low,
                )
            )  # fmt: skip
    return types, offers


def refresh_aws(
    catalog: Catalog,
    regions: Iterable[str],
    *,
    out_root: Path,
    clients: ClientFactory | None = None,
    on_region_done: Callable[[], None] | None = None,
    now: dt.datetime | None = None,
) -> Path:
    """Query AWS for ``regions`` and write a new snapshot folder under ``out_root``; returns it.

    Offers of regions not refreshed, and of other clouds, are carried over from ``catalog``.
    Nothing is written unless every region succeeds.
    """
    clients = clients or default_client_factory
    stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    today = stamp.date()
    region_list = list(dict.fromkeys(regions))
    if not region_list:
        raise PerdollarError("no AWS regions to refresh", "pass --region, e.g. --region us-east-1")
    fresh_types: dict[str, InstanceType] = {}
    fresh_offers: list[Offer] = []
    for region in region_list:
        types, offers = _fetch_region(region, catalog, clients, today)
        fresh_types.update(types)
        fresh_offers.extend(offers)
        if on_region_done:
            on_region_done()

    refreshed = set(region_list)
    instance_types = dict(catalog.instance_types)
    for name, instance in fresh_types.items():
        instance_types[("aws", name)] = instance
    kept = [o for o in catalog.offers if not (o.cloud == "aws" and o.region in refreshed)]
    offers = kept + fresh_offers
    used = {(o.cloud, o.instance_type) for o in offers}
    instance_types = {k: v for k, v in instance_types.items() if k in used}

    snapshot_id = f"aws-refresh-{stamp:%Y%m%dT%H%M%SZ}"
    manifest = dict(catalog.manifest)
    manifest.update(
        {
            "snapshot_id": snapshot_id,
            "kind": "refresh",
            "based_on": catalog.snapshot_id,
            "built_at": stamp.replace(microsecond=0).isoformat(),
            "captured_at": max(o.captured_at for o in offers).isoformat(),
            "oldest_price_date": min(o.captured_at for o in offers).isoformat(),
            "refreshed": {
                "cloud": "aws",
                "regions": region_list,
                "apis": ["pricing:GetProducts", "ec2:DescribeSpotPriceHistory", "ec2:DescribeInstanceTypes"],
                "date": today.isoformat(),
            },
        }
    )
    flags = dict(manifest.get("flags", {}))
    flags[CARRIED_BUCKET_FLAG] = (
        "Spot Advisor bucket carried over from the previous snapshot (no API for it)."
    )
    manifest["flags"] = flags
    frames = catalog_frames(catalog, instance_types=instance_types, offers=offers)
    manifest["counts"] = {"accelerators": len(catalog.accelerators), "instance_types": len(instance_types),
                          "offers": len(offers)}  # fmt: skip

    out_root.mkdir(parents=True, exist_ok=True)
    final = out_root / f"{stamp:%Y%m%dT%H%M%SZ}-aws"
    partial = out_root / f".{final.name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    # Written aside and renamed, so a half-written folder is never taken for the newest snapshot.
    write_snapshot(partial, *frames, manifest)
    check_loads(partial)
    partial.rename(final)
    return final
