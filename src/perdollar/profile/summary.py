"""Views of a Profile for people and programs: totals per phase and class, top operators, JSON."""

from __future__ import annotations

from collections import defaultdict

from perdollar.profile.model import OperatorRecord, Profile


def forward_flops_per_sample(profile: Profile) -> float:
    return sum(op.flops for op in profile.operators if op.phase == "forward") / profile.batch_size


def totals_by(profile: Profile, attribute: str) -> dict[str, dict[str, float]]:
    """FLOPs and bytes per step, grouped by ``phase`` or ``op_class``, largest FLOPs first."""
    groups: dict[str, dict[str, float]] = defaultdict(lambda: {"flops": 0.0, "bytes": 0.0, "calls": 0.0})
    for op in profile.operators:
        group = groups[str(getattr(op, attribute))]
        group["flops"] += op.flops
        group["bytes"] += op.bytes_moved
        group["calls"] += op.count
    return dict(sorted(groups.items(), key=lambda item: (-item[1]["flops"], -item[1]["bytes"])))


def top_operators(profile: Profile, key: str, limit: int) -> list[OperatorRecord]:
    """The ``limit`` heaviest operator records by ``flops`` or ``bytes``."""
    measure = (lambda op: op.flops) if key == "flops" else (lambda op: op.bytes_moved)
    return sorted(profile.operators, key=measure, reverse=True)[:limit]


def operator_dict(op: OperatorRecord) -> dict[str, object]:
    return {
        "name": op.name,
        "class": op.op_class,
        "phase": op.phase,
        "dtype": op.dtype,
        "count": op.count,
        "flops": op.flops,
        "bytes_read": op.bytes_read,
        "bytes_written": op.bytes_written,
        "shape": op.shape,
        "gemm_mnk": list(op.gemm_mnk) if op.gemm_mnk else None,
    }


def profile_dict(profile: Profile) -> dict[str, object]:
    """The machine-readable profile (``perdollar profile --json``); all byte figures in bytes."""
    memory = profile.memory
    return {
        "workload": profile.workload_name,
        "fingerprint": profile.workload_fingerprint,
        "kind": profile.kind,
        "batch_size": profile.batch_size,
        "precision": profile.precision,
        "sample_unit": profile.sample_unit,
        "flops_per_sample": profile.flops_per_sample,
        "forward_flops_per_sample": forward_flops_per_sample(profile),
        "bytes_per_sample": profile.bytes_per_sample,
        "flops_per_step": profile.flops_per_step,
        "bytes_per_step": profile.bytes_per_step,
        "arithmetic_intensity": profile.arithmetic_intensity,
        "params": profile.params,
        "trainable_params": profile.trainable_params,
        "gradient_bytes": profile.gradient_bytes,
        "input_bytes_per_sample": profile.input_bytes_per_sample,
        "memory": {
            "weights": memory.weights,
            "gradients": memory.gradients,
            "optimizer_state": memory.optimizer_state,
            "activations": memory.activations,
            "workspace": memory.workspace,
            "total": memory.total,
        },
        "by_phase": totals_by(profile, "phase"),
        "by_class": totals_by(profile, "op_class"),
        "unclassified_ops": list(profile.unclassified_ops),
        "operators": [operator_dict(op) for op in profile.operators],
    }
