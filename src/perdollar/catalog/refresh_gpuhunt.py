"""A new catalog snapshot from gpuhunt's offers: pure mapping onto the snapshot's schema.

Every provider refreshed replaces that cloud's offers; clouds not refreshed (or whose source
failed) keep the previous snapshot's offers. Instance types the previous snapshot knows keep its
curated facts (network, EFA, documented GPU shares, exclusions); new ones (a GPU cloud's
machines) are made from the gpuhunt rows. Each offer keeps its own capture date.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field

from perdollar.catalog.catalog import Catalog
from perdollar.catalog.gpuhunt_rows import PROVIDERS, GpuhuntRow, ProviderOffers
from perdollar.catalog.model import InstanceType, Offer
from perdollar.catalog.refresh_aws import CARRIED_BUCKET_FLAG
from perdollar.errors import PerdollarError

PRICE_BASIS = "gpuhunt"
GB_PER_GIB = 2**30 / 1e9


@dataclass(frozen=True)
class RefreshResult:
    instance_types: dict[tuple[str, str], InstanceType]
    offers: list[Offer]
    refreshed: dict[str, int]  # cloud → offers written
    unknown_accelerators: dict[str, int] = field(default_factory=dict)  # gpu name → rows left out
    # provider → why nothing of its file could be used (that cloud keeps its previous offers)
    unusable: dict[str, str] = field(default_factory=dict)


def accelerator_key(catalog: Catalog, name: str, memory_gb: float, instance_name: str = "") -> str | None:
    """The chip a gpuhunt GPU name and per-GPU memory mean ("A100" with 80 GB → A100 80GB), or None.

    gpuhunt names the family only; a form factor in the instance's name ("gpu_1x_h100_pcie",
    "…_sxm4", "H100 NVL", "HGX A100": an HGX board carries SXM modules) picks the board where the
    family has several of the same memory.
    """
    match = re.search(r"(pcie|sxm\d?|nvl|hgx)", instance_name.lower())
    form = "sxm" if match and match[1] == "hgx" else (match[1] if match else "")
    sized = [f"{name} {memory_gb:g}GB", f"{name}-{memory_gb:g}GB"] if memory_gb else []
    candidates = ([f"{name} {form} {memory_gb:g}GB"] if form and memory_gb else []) + sized + [name]
    for text in candidates:
        try:
            chip = catalog.accelerator(text)
        except PerdollarError:
            continue
        if not memory_gb or abs(chip.memory_gib - memory_gb) <= 0.15 * memory_gb:
            return chip.key
    try:
        family = catalog.accelerator_keys_matching(name)
    except PerdollarError:
        return None
    # A family name ("H100") with the memory that tells its boards apart (80 GB SXM vs 94 GB NVL).
    fits = sorted(
        (abs(catalog.accelerators[k].memory_gib - memory_gb), k)
        for k in family
        if memory_gb and abs(catalog.accelerators[k].memory_gib - memory_gb) <= 0.15 * memory_gb
    )
    return fits[0][1] if fits else None


def _region(cloud: str, location: str) -> str:
    # GCP rows are per zone (us-central1-a); the catalog prices per region, over its zones.
    if cloud == "gcp" and location.count("-") == 2:
        return location.rsplit("-", 1)[0]
    return location


def _instance_name(cloud: str, row: GpuhuntRow, several_counts: bool) -> str:
    if cloud == "vastai":
        return f"{row.gpu_count:g}x {row.gpu_name}"  # a marketplace host's id says nothing: name the shape
    if cloud == "gcp" and row.instance_name.startswith("n1-") and row.gpu_count:
        return f"{row.instance_name}+{int(row.gpu_count)}x{row.gpu_name}"  # as the bundled catalog names them
    if cloud == "gcp" and row.gpu_vendor == "google":
        return f"tpu-{row.instance_name}"
    if several_counts:
        return f"{row.instance_name} x{row.gpu_count:g}"  # a GPU type rented by the GPU (RunPod)
    return row.instance_name


def _new_instance(cloud: str, name: str, rows: list[GpuhuntRow], key: str | None) -> InstanceType:
    count = rows[0].gpu_count
    return InstanceType(
        cloud=cloud,
        name=name,
        vcpus=min(r.cpu for r in rows),  # where locations differ, the smallest host is promised
        memory_gib=min(r.memory_gb for r in rows) / GB_PER_GIB,
        arch="arm64" if rows[0].gpu_name.upper().startswith(("GH200", "GB200")) else "amd64",
        accelerator_name=rows[0].gpu_name or None,
        accelerator_key=key,
        accelerator_count=count,
        accelerator_memory_gib_total=rows[0].gpu_memory_gb * count,  # per-GPU GB as the chip table states it
        network_gbps=None,
    )


@dataclass(frozen=True)
class ProviderMapping:
    """One provider's rows in the snapshot's schema: the machines the base catalog lacks, and offers."""

    instance_types: dict[tuple[str, str], InstanceType]
    offers: list[Offer]
    unknown_accelerators: dict[str, int]  # gpu name → rows left out


def map_provider(
    base: Catalog, cloud: str, rows: Iterable[GpuhuntRow], captured_at: dt.date, price_basis: str
) -> ProviderMapping:
    """``cloud``'s gpuhunt-format rows as offers dated ``captured_at``; machines ``base`` knows keep its
    curated facts, new ones (a GPU cloud's) are made from the rows. Both the refresh and the build of
    the bundled snapshot (its GPU-cloud table) make a GPU cloud's machines here."""
    rows = tuple(rows)
    bucket_of = {(o.instance_type, o.region): o.interruption_bucket for o in base.offers
                 if o.cloud == cloud and o.market == "spot" and o.interruption_bucket}  # fmt: skip
    counts: dict[str, set[float]] = {}
    for row in rows:
        counts.setdefault(row.instance_name, set()).add(row.gpu_count)
    grouped: dict[tuple[str, str, bool], list[GpuhuntRow]] = {}
    for row in rows:
        name = _instance_name(cloud, row, len(counts[row.instance_name]) > 1)
        grouped.setdefault((name, _region(cloud, row.location), row.spot), []).append(row)
    by_name: dict[str, list[GpuhuntRow]] = {}
    for (name, _, _), named in grouped.items():
        by_name.setdefault(name, []).extend(named)
    instance_types: dict[tuple[str, str], InstanceType] = {}
    unknown: dict[str, int] = {}
    usable: set[str] = set()
    for name, named in by_name.items():
        if (cloud, name) in base.instance_types:
            usable.add(name)  # the curated row wins
            continue
        key = None
        if named[0].gpu_count and named[0].gpu_name:
            key = accelerator_key(base, named[0].gpu_name, named[0].gpu_memory_gb, named[0].instance_name)
            if key is None:
                unknown[named[0].gpu_name] = unknown.get(named[0].gpu_name, 0) + len(named)
                continue
        elif cloud not in ("aws", "gcp", "azure"):
            continue  # a GPU cloud's CPU machines are not what it is rented for
        instance_types[(cloud, name)] = _new_instance(cloud, name, named, key)
        usable.add(name)
    offers = []
    for (name, region, spot), priced in sorted(grouped.items()):
        if name not in usable:
            continue
        prices = [r.price for r in priced]
        low, high = min(prices), max(prices)
        # Spot: the zones' median is the price to expect; on demand, the lowest listing is for sale.
        price = statistics.median(prices) if spot else low
        bucket = bucket_of.get((name, region)) if spot else None
        offers.append(
            Offer(
                cloud, name, region, "spot" if spot else "on-demand", price, captured_at,
                price_max_per_hour=high if spot and high != low else None,
                price_basis=price_basis,
                interruption_bucket=bucket, flags=(CARRIED_BUCKET_FLAG,) if bucket else (),
                price_min_per_hour=low if spot and high != low else None,
            )
        )  # fmt: skip
    return ProviderMapping(instance_types, offers, unknown)


def build_refresh(base: Catalog, sources: Iterable[ProviderOffers]) -> RefreshResult:
    """Map gpuhunt offers onto ``base``'s schema; the result's offers replace the refreshed clouds'."""
    instance_types = dict(base.instance_types)
    fresh: list[Offer] = []
    refreshed: dict[str, int] = {}
    unknown: dict[str, int] = {}
    unusable: dict[str, str] = {}
    for source in sources:
        cloud = PROVIDERS[source.provider]
        mapped = map_provider(
            base, cloud, source.rows, source.captured_at, f"{PRICE_BASIS}:{source.provider}"
        )
        for name, rows in mapped.unknown_accelerators.items():
            unknown[name] = unknown.get(name, 0) + rows
        if not mapped.offers:
            unusable[source.provider] = (
                f"none of its {len(source.rows)} priced rows is a machine the catalog can price"
            )
            continue
        instance_types.update(mapped.instance_types)
        fresh.extend(mapped.offers)
        refreshed[cloud] = len(mapped.offers)
    kept = [o for o in base.offers if o.cloud not in refreshed]
    offers = kept + fresh
    used = {(o.cloud, o.instance_type) for o in offers}
    return RefreshResult(
        instance_types={k: v for k, v in instance_types.items() if k in used},
        offers=offers,
        refreshed=refreshed,
        unknown_accelerators=unknown,
        unusable=unusable,
    )


def refresh_manifest(base: Catalog, result: RefreshResult, stamp: dt.datetime, **details: object) -> dict:
    """``base``'s manifest updated for the new snapshot (id, dates, what was refreshed and how)."""
    days = [o.captured_at for o in result.offers]
    manifest = dict(base.manifest)
    manifest.update(
        snapshot_id=f"gpuhunt-refresh-{stamp:%Y%m%dT%H%M%SZ}",
        kind="refresh",
        based_on=base.snapshot_id,
        built_at=stamp.replace(microsecond=0).isoformat(),
        captured_at=max(days).isoformat(),
        oldest_price_date=min(days).isoformat(),
        refreshed={"source": "gpuhunt", "offers_by_cloud": result.refreshed, **details},
        counts={
            "accelerators": len(base.accelerators),
            "instance_types": len(result.instance_types),
            "offers": len(result.offers),
        },
    )
    if result.unknown_accelerators:
        manifest["refreshed"]["rows_with_unknown_accelerators"] = dict(result.unknown_accelerators)
    return manifest
