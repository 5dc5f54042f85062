"""Throughput of a profile on whole instances and clusters, for one instance or the whole catalog.

The roofline runs once per distinct accelerator; everything per instance (accelerators per
node, nodes, links, host ceilings, memory fit) is array arithmetic over all instances at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from perdollar.catalog.model import Accelerator, InstanceType
from perdollar.predict import fp16_fallback
from perdollar.predict.calibration import Calibration
from perdollar.predict.communication import (
    DEFAULT_BACKWARD_OVERLAP,
    exposed_seconds,
    link_for,
    ring_allreduce_seconds,
)
from perdollar.predict.params import shipped_model
from perdollar.predict.step import device_steps
from perdollar.profile.model import Profile

MEMORY_HEADROOM = 0.10  # allocator fragmentation, CUDA context, framework workspace
# A step that needs more than the headroom leaves but no more than the device less this share
# runs where the allocator packs well: it is "tight", ranked with its margin said, not refused
# (the language-model planner's rule too: perdollar.predict.llm.memory.TIGHT_FIT_RESERVE).
TIGHT_FIT_RESERVE = 0.05


def usable_memory_bytes(memory_gib: float, share: float = 1.0) -> float:
    """What a workload may hold on one device (or a ``share`` of one) after the headroom."""
    return memory_gib * 2**30 * share * (1 - MEMORY_HEADROOM)


SUPPORTED_STACKS = ("cuda", "rocm")
# CPU-only spec estimate: fp32 FMA rate per vCPU (AVX2/NEON class: 8 lanes × 2 ops at ~2.5 GHz,
# two vCPUs per core) at the efficiency eager PyTorch typically reaches on CPUs.
CPU_FLOPS_PER_VCPU = 2.5e9 * 16 / 2
CPU_EFFICIENCY = 0.25

PREDICTION_COLUMNS = (
    "cloud",
    "instance_type",
    "accelerator_key",
    "nodes",
    "accelerators_per_node",
    "samples_per_second",
    "samples_per_second_low",
    "samples_per_second_high",
    "basis",
    "bottleneck",
    "step_time_s",
    "compute_time_s",
    "communication_time_s",
    "fits",
    "fit_reason",
    "max_batch_that_fits",
    "breakdown_s",
    "excluded_reason",
)


def _accelerator_rows(
    profile: Profile, accelerators: Sequence[Accelerator], calibration: Calibration | None
) -> pd.DataFrame:
    """Per accelerator: one device's step time (calibrated where possible), basis and breakdown."""
    steps = device_steps(profile, accelerators)
    device = steps.seconds.copy()  # the kernels' share of the step (the rest waits on the host)
    seconds = steps.seconds.copy()
    host_bound = np.full(len(accelerators), False)
    basis = np.full(len(accelerators), "spec", dtype=object)
    if calibration is not None and calibration.has_device_anchor:
        device, seconds, host_bound = calibration.device_and_step_seconds(steps.seconds, steps.memory_share)
        basis[:] = "calibrated"
        for i, acc in enumerate(accelerators):
            measured = calibration.measured_samples_per_second.get(acc.key)
            if measured:
                seconds[i] = device[i] = profile.batch_size / measured
                basis[i], host_bound[i] = "measured", calibration.host_bounds(seconds[i])
    parts = [
        steps.rescaled(i, float(device[i]), float(seconds[i]), bool(host_bound[i]))
        for i in range(len(accelerators))
    ]
    scale = device / np.maximum(steps.seconds, 1e-30)
    return pd.DataFrame(
        {
            "accelerator_key": [a.key for a in accelerators],
            "device_seconds": seconds,
            "backward_seconds": steps.backward * scale,
            "device_bottleneck": [bottleneck for _, bottleneck in parts],
            "basis": basis,
            "breakdown_s": [breakdown for breakdown, _ in parts],
        }
    )


def _band(values: np.ndarray, basis: np.ndarray, stacks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    model = shipped_model()
    pairs = list(zip(basis.astype(str), stacks.astype(str), strict=True))
    errors = {pair: model.errors_for(*pair) for pair in set(pairs)}  # a few kinds, many rows
    q10 = np.array([errors[pair].q10 for pair in pairs])
    q90 = np.array([errors[pair].q90 for pair in pairs])
    return values * np.exp(q10), values * np.exp(q90)


def prediction_frame(
    profile: Profile,
    instances: Sequence[InstanceType],
    accelerators: dict[str, Accelerator],
    node_counts: Iterable[int] = (1,),
    *,
    calibration: Calibration | None = None,
    data_bytes_per_sample: float | None = None,
    input_rate_per_core: float | None = None,
    overlap: float = DEFAULT_BACKWARD_OVERLAP,
) -> pd.DataFrame:
    """One row per (instance, node count): the Prediction fields plus ``cloud``."""
    node_counts = sorted({int(n) for n in node_counts if int(n) >= 1}) or [1]
    keys = sorted({i.accelerator_key for i in instances if i.accelerator_key in accelerators})
    # A chip without bf16 runs a mixed-precision bf16 step in fp16 with loss scaling (fp16_fallback).
    as_run = [fp16_fallback.as_run(accelerators[k], profile.precision) for k in keys]
    per_acc = _accelerator_rows(profile, as_run, calibration) if keys else None
    base = pd.DataFrame(
        {
            "cloud": [i.cloud for i in instances],
            "instance_type": [i.name for i in instances],
            "accelerator_key": [
                i.accelerator_key if i.accelerator_key in accelerators else None for i in instances
            ],
            "accelerators_per_node": [float(i.accelerator_count or 0.0) for i in instances],
            "vcpus": [float(i.vcpus) for i in instances],
            "network_gbps": [i.network_gbps if i.network_gbps is not None else math.nan for i in instances],
            "efa": [i.efa_interfaces for i in instances],
            "cpu_only": [bool(i.is_cpu_only) for i in instances],
            "instance_excluded": [getattr(i, "excluded_reason", "") or "" for i in instances],
            "single_node_reason": [getattr(i, "single_node_reason", "") or "" for i in instances],
        }
    )
    if per_acc is not None:
        base = base.merge(per_acc, on="accelerator_key", how="left")
    else:
        for column in ("device_seconds", "backward_seconds", "device_bottleneck", "basis", "breakdown_s"):
            base[column] = np.nan if column.endswith("seconds") else None
    acc_of = [accelerators.get(k) if isinstance(k, str) else None for k in base["accelerator_key"]]
    base["interconnect_gbps"] = [
        a.interconnect_bandwidth_gbps if a and a.interconnect_bandwidth_gbps else math.nan for a in acc_of
    ]
    base["memory_bytes"] = [a.memory_gib * 2**30 if a and a.memory_gib else math.nan for a in acc_of]
    base["stack"] = [a.software_stack if a else "cpu" for a in acc_of]
    base["bf16"] = [a.supports_bf16 if a else True for a in acc_of]
    base["precision_remark"] = [fp16_fallback.fp16_fallback_remark(a, profile.precision) for a in acc_of]
    _cpu_only(base, profile, calibration)
    frames = []
    for nodes in node_counts:
        frame = base.copy()
        frame["nodes"] = nodes
        frames.append(frame)
    out = pd.concat(frames, ignore_index=True)
    _cluster(out, profile, calibration, data_bytes_per_sample, input_rate_per_core, overlap)
    _memory_fit(out, profile)
    return out[[*PREDICTION_COLUMNS, "precision_remark"]]


def _cpu_only(base: pd.DataFrame, profile: Profile, calibration: Calibration | None) -> None:
    cpu = base["cpu_only"].to_numpy(dtype=bool)
    if not cpu.any():
        return
    vcpus = base.loc[cpu, "vcpus"].to_numpy()
    per_core = calibration.cpu_samples_per_second_per_core if calibration else None
    if per_core:
        rate, basis = per_core * vcpus, "calibrated"
    else:
        rate, basis = (
            vcpus * CPU_FLOPS_PER_VCPU * CPU_EFFICIENCY / max(profile.flops_per_sample, 1.0),
            "cpu-spec",
        )
    base.loc[cpu, "device_seconds"] = profile.batch_size / rate
    base.loc[cpu, "backward_seconds"] = 0.0
    base.loc[cpu, "device_bottleneck"] = "compute"
    base.loc[cpu, "basis"] = basis
    base.loc[cpu, "accelerators_per_node"] = 1.0  # the whole host is the device
    base.loc[cpu, "breakdown_s"] = pd.Series([{}] * int(cpu.sum()), index=base.index[cpu])
    base.loc[cpu, "stack"] = "cpu"


def _cluster(
    out: pd.DataFrame,
    profile: Profile,
    calibration: Calibration | None,
    data_bytes_per_sample: float | None,
    input_rate_per_core: float | None,
    overlap: float,
) -> None:
    nodes = out["nodes"].to_numpy(dtype=float)
    per_node = out["accelerators_per_node"].to_numpy(dtype=float)
    whole = np.maximum(per_node, 1.0)
    devices = nodes * np.where(per_node >= 1, np.floor(per_node), 1.0)
    fraction = np.where(per_node < 1, np.maximum(per_node, 1e-9), 1.0)  # a partial GPU runs slower
    device_s = out["device_seconds"].to_numpy(dtype=float) / fraction
    train = profile.kind == "train"
    bandwidth, latency = link_for(nodes, whole, out["interconnect_gbps"], out["network_gbps"], out["efa"])
    allreduce = ring_allreduce_seconds(profile.gradient_bytes if train else 0.0, devices, bandwidth, latency)
    exposed = exposed_seconds(allreduce, out["backward_seconds"].fillna(0.0).to_numpy(), overlap)
    step = device_s + exposed
    rate = devices * profile.batch_size / step
    bottleneck = np.where(
        exposed > 0.25 * device_s, "communication", out["device_bottleneck"].fillna("compute")
    )
    per_core = input_rate_per_core or (calibration.input_samples_per_second_per_core if calibration else None)
    if per_core:
        cap = per_core * out["vcpus"].to_numpy(dtype=float) * nodes
        bottleneck = np.where(cap < rate, "input-pipeline", bottleneck)
        rate = np.minimum(rate, cap)
    if data_bytes_per_sample:
        from perdollar.predict.communication import DEFAULT_NETWORK_GBPS

        network = np.nan_to_num(out["network_gbps"].to_numpy(dtype=float), nan=DEFAULT_NETWORK_GBPS)
        cap = network / 8.0 * 1e9 * nodes / data_bytes_per_sample
        bottleneck = np.where(cap < rate, "network-ingest", bottleneck)
        rate = np.minimum(rate, cap)
    basis = out["basis"].fillna("spec").to_numpy()
    basis = np.where((basis == "measured") & ((nodes > 1) | (per_node > 1)), "calibrated", basis)
    low, high = _band(rate, basis, out["stack"].to_numpy())
    out["samples_per_second"] = rate
    out["samples_per_second_low"] = low
    out["samples_per_second_high"] = high
    out["basis"] = np.where(basis == "cpu-spec", "spec", basis)
    out["bottleneck"] = bottleneck
    out["step_time_s"] = step
    out["compute_time_s"] = device_s
    out["communication_time_s"] = exposed
    stack = out["stack"].to_numpy()
    unsupported = ~np.isin(stack, (*SUPPORTED_STACKS, "cpu"))
    reason = np.where(
        unsupported,
        np.char.add(
            "PyTorch eager on a ",
            np.char.add(stack.astype(str), " stack needs a compiler path perdollar does not model"),
        ),
        "",
    )
    missing = out["accelerator_key"].isna().to_numpy() & ~out["cpu_only"].to_numpy(dtype=bool)
    reason = np.where(missing, "accelerator not in the accelerator table", reason)
    if profile.precision in fp16_fallback.REFUSED_WITHOUT_BF16:
        no_bf16 = ~out["bf16"].to_numpy(dtype=bool)
        refusal = fp16_fallback.bf16_refusal_text()
        reason = np.where(no_bf16 & (reason == "") & (stack != "cpu"), refusal, reason)
    # Several machines of a cloud that states no network between them are not one cluster.
    lone = out["single_node_reason"].to_numpy(dtype=str)
    several = out["nodes"].to_numpy() > 1
    reason = np.where(several & (lone != "") & (reason == ""), lone, reason)
    # The catalog's own reason (a virtual-desktop GPU slice, …) comes first.
    instance_reason = out["instance_excluded"].to_numpy(dtype=str)
    out["excluded_reason"] = np.where(instance_reason != "", instance_reason, reason)
    out["breakdown_s"] = [b if isinstance(b, dict) else {} for b in out["breakdown_s"]]


# Activations must hold at least this share of the traced peak for it to scale with the batch.
_ACTIVATION_SHARE_FOR_MAX_BATCH = 0.01


def _memory_fit(out: pd.DataFrame, profile: Profile) -> None:
    per_node = out["accelerators_per_node"].to_numpy(dtype=float)
    capacity = out.get("memory_bytes", pd.Series(np.nan, index=out.index)).to_numpy(dtype=float)
    device = capacity * np.where(per_node < 1, per_node, 1.0)
    capacity = device * (1 - MEMORY_HEADROOM)
    limit = device * (1 - TIGHT_FIT_RESERVE)
    need = profile.memory.total
    fixed = need - profile.memory.activations
    per_sample = profile.memory.activations / max(profile.batch_size, 1)
    if profile.memory.activations < _ACTIVATION_SHARE_FOR_MAX_BATCH * need:
        # The traced peak came where activations were gone (the optimizer step of a small batch):
        # it says nothing of how memory grows with the batch, and no largest batch is claimed.
        per_sample = 0.0
    fits = np.where(np.isnan(capacity), True, need <= np.maximum(capacity, limit))
    max_batch = np.where(
        np.isnan(capacity) | (per_sample <= 0), np.nan, np.floor((capacity - fixed) / max(per_sample, 1e-9))
    )
    out["fits"] = fits
    gib = 2**30
    out["fit_reason"] = [
        ""
        if math.isnan(c) or (f and need <= c)
        else f"tight: {(need - c) / gib:.1f} GiB over the estimate's margin ({need / gib:.1f} of "
        f"{d / gib:.1f} GiB held)"
        if f
        else f"needs {need / gib:.1f} GiB per device, has {c / gib:.1f} GiB after "
        f"{MEMORY_HEADROOM:.0%} headroom ({lim / gib:.1f} at the tightest)"
        for f, c, d, lim in zip(fits, capacity, device, limit, strict=True)
    ]
    out["max_batch_that_fits"] = [
        int(b) if np.isfinite(b) and b >= 1 else (0 if np.isfinite(b) else None) for b in max_batch
    ]


def node_counts(max_nodes: int) -> tuple[int, ...]:
    """1, 2, 4, 8, … up to ``max_nodes`` (and ``max_nodes`` itself when it is not a power of two)."""
    if max_nodes < 1:
        raise ValueError("max_nodes must be at least 1")
    counts = [1]
    while counts[-1] * 2 <= max_nodes:
        counts.append(counts[-1] * 2)
    if counts[-1] != max_nodes:
        counts.append(max_nodes)
    return tuple(counts)
