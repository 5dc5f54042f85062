"""Sizing one kind of replica: latency curves, the serving target, and the replica plan."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pandas as pd

from perdollar.goals import DEFAULT_SERVING_HEADROOM
from perdollar.predict.network_serving.queueing import ReplicaPlan, batching_latency, plan_replicas

DEFAULT_HEADROOM = DEFAULT_SERVING_HEADROOM
# Batching waits tried when the user sets none, as fractions of the tightest SLO.
WAIT_FRACTIONS = (0.0, 0.05, 0.1, 0.2, 0.4)
DEFAULT_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128)
# CPU-only instances are served from a curve measured on a CPU host: one replica per as many vCPUs
# as that host had, each as fast as measured there. A different CPU generation widens the band.
CPU_KEY = "CPU"
CPU_BAND = (0.7, 1.5)


@dataclass(frozen=True)
class ServiceCurve:
    """Seconds one replica takes per batch, on one accelerator, by batch size."""

    accelerator_key: str
    batch_sizes: tuple[int, ...]
    seconds: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]
    basis: str  # measured | calibrated | spec
    bottleneck: str = ""
    excluded_reason: str = ""  # why this accelerator cannot serve the model at all

    def scaled(self, device_fraction: float) -> ServiceCurve:
        """The curve on a partial device (a fraction of a GPU runs proportionally slower)."""
        factor = 1.0 / device_fraction
        return ServiceCurve(
            self.accelerator_key,
            self.batch_sizes,
            tuple(s * factor for s in self.seconds),
            tuple(s * factor for s in self.low),
            tuple(s * factor for s in self.high),
            self.basis,
            self.bottleneck,
            self.excluded_reason,
        )


@dataclass(frozen=True)
class ServingTarget:
    """The serving question: rate, SLO, and how to buy it."""

    qps: float
    slo_ms: Mapping[float, float]  # quantile (0.99, 0.95) → milliseconds
    headroom: float = DEFAULT_HEADROOM
    max_wait_ms: float | None = None
    markets: tuple[str, ...] = ("on-demand", "spot")
    clouds: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    spot_overprovision: float | None = None  # extra share of instances on spot; None = from the bucket
    payload_bytes: float = 0.0
    max_batch: int | None = None  # largest batch a replica may run (None: up to 128 or memory)

    def batch_sizes(self) -> tuple[int, ...]:
        if self.max_batch is None:
            return DEFAULT_BATCH_SIZES
        ladder = [b for b in DEFAULT_BATCH_SIZES if b < self.max_batch]
        return (*ladder, self.max_batch)

    @property
    def slo_label(self) -> str:
        return ", ".join(f"P{round(q * 100)} ≤ {ms:g} ms" for q, ms in sorted(self.slo_ms.items()))

    def wait_options_s(self) -> tuple[float, ...]:
        if self.max_wait_ms is not None:
            return (self.max_wait_ms / 1e3,)
        tightest = min(self.slo_ms.values()) / 1e3
        return tuple(fraction * tightest for fraction in WAIT_FRACTIONS)


@dataclass(frozen=True)
class AcceleratorPlan:
    """Sizing for one kind of replica (an accelerator, or a fraction of one)."""

    accelerator_key: str
    device_fraction: float
    basis: str
    bottleneck: str
    replicas: int = 0
    replicas_if_slow: int = 0  # sized on the slow edge of the latency band
    batch: int = 0
    max_wait_ms: float = 0.0
    rate_per_replica: float = 0.0
    capacity_per_replica: float = 0.0
    utilisation: float = 0.0
    latency_ms: dict[float, float] = field(default_factory=dict)
    latency_high_ms: dict[float, float] = field(default_factory=dict)
    excluded_reason: str = ""


def plan_accelerator(
    curve: ServiceCurve, target: ServingTarget, device_fraction: float = 1.0
) -> AcceleratorPlan:
    """Batch, wait and replica count for one accelerator; an exclusion reason when none works."""
    base = AcceleratorPlan(curve.accelerator_key, device_fraction, curve.basis, curve.bottleneck)
    if curve.excluded_reason:
        return _excluded(base, curve.excluded_reason)
    if not curve.batch_sizes:
        return _excluded(base, "does not fit in accelerator memory even at batch size 1")
    scaled = curve.scaled(device_fraction) if device_fraction < 1 else curve
    slo_s = {q: ms / 1e3 for q, ms in target.slo_ms.items()}
    planned = partial(
        plan_replicas,
        qps=target.qps,
        slo_s=slo_s,
        headroom=target.headroom,
        max_wait_options_s=target.wait_options_s(),
    )
    nominal = planned(scaled.batch_sizes, scaled.seconds)
    if nominal.plan is None:
        share = f" on a {device_fraction:.2g} share of the device" if device_fraction < 1 else ""
        return _excluded(base, f"{nominal.reason}{share} ({target.slo_label})")
    slow = planned(scaled.batch_sizes, scaled.high)
    plan = nominal.plan
    return AcceleratorPlan(
        accelerator_key=curve.accelerator_key,
        device_fraction=device_fraction,
        basis=curve.basis,
        bottleneck=curve.bottleneck,
        replicas=plan.replicas,
        replicas_if_slow=slow.plan.replicas if slow.plan else 0,
        batch=plan.batch,
        max_wait_ms=plan.max_wait_s * 1e3,
        rate_per_replica=plan.rate_per_replica,
        capacity_per_replica=plan.capacity_per_replica,
        utilisation=plan.utilisation,
        latency_ms={q: s * 1e3 for q, s in plan.latency_s.items()},
        latency_high_ms=_latency_on_slow_edge(plan, scaled, slo_s),
    )


def _latency_on_slow_edge(
    plan: ReplicaPlan, curve: ServiceCurve, slo_s: Mapping[float, float]
) -> dict[float, float]:
    """The chosen plan's latency (ms) if every batch takes the slow edge of its predicted time."""
    service = float(np.interp(plan.formed_batch, curve.batch_sizes, curve.high))
    figures = {}
    for quantile in slo_s:
        result = batching_latency(
            plan.rate_per_replica, plan.formed_batch, service, quantile, plan.max_wait_s
        )
        figures[quantile] = float(result.latency_quantile_s) * 1e3
    return figures


def _excluded(base: AcceleratorPlan, reason: str) -> AcceleratorPlan:
    return AcceleratorPlan(
        base.accelerator_key, base.device_fraction, base.basis, base.bottleneck, excluded_reason=reason
    )


def plan_all(
    curves: Mapping[str, ServiceCurve], offers: pd.DataFrame, target: ServingTarget
) -> dict[tuple[str, float], AcceleratorPlan]:
    """One plan per distinct (accelerator, device fraction) among the offers."""
    count = offers["accelerator_count"].fillna(0).astype(float)
    pairs = set(zip(offers["accelerator_key"].fillna(""), np.where(count < 1, count, 1.0), strict=True))
    plans = {}
    for key, fraction in pairs:
        if key in curves and fraction > 0:
            plans[(key, float(fraction))] = plan_accelerator(curves[key], target, float(fraction))
    if CPU_KEY in curves:
        plans[(CPU_KEY, 1.0)] = plan_accelerator(curves[CPU_KEY], target)
    return plans
