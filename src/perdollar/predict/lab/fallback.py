"""The fallback profile: a two-operator stand-in for a model perdollar has no reference workload for.

A published figure names a model ("GNMT v2", "Tacotron 2") that perdollar cannot trace. Such a
workload is described by three numbers per step: GEMM FLOPs (``FALLBACK_FLOPS_PER_SAMPLE`` per
sample, ×3 for training), memory traffic as bytes per GEMM FLOP, and kernel launches per step. The
last two are fitted per model name on the development set (a property of the workload, like a
calibration; they carry no GPU constant) and shipped in ``predict/data/params.json``. A model never
seen takes the median of the fitted models of its group (CNN, transformer/LLM, other) and task that
were measured in the same unit (an LLM's ms per iteration, a decoder's generated tokens/s), else of
its group and task: the unit says how a figure was taken, which the descriptor depends on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

FALLBACK_FLOPS_PER_SAMPLE = 1e9  # scale only: the fitted ratios below carry the workload's shape
DEFAULT_DESCRIPTOR = {"log_bytes_per_flop": math.log(0.05), "log_launches": math.log(300.0)}

# Bytes moved relative to fp32 for each published precision label (weights and activations).
ELEMENT_FACTOR = {
    "fp32": 1.0,
    "tf32": 1.0,
    "amp": 0.6,
    "fp16": 0.5,
    "bf16": 0.5,
    "f16": 0.5,
    "fp8": 0.25,
    "int8": 0.25,
    "fp4": 0.15,
    "q4_k_m": 0.15,
}
COMPUTE_DTYPE = {
    "fp32": "fp32",
    "tf32": "tf32",
    "amp": "fp16",
    "fp16": "fp16",
    "bf16": "bf16",
    "f16": "fp16",
    "fp8": "fp8",
    "int8": "fp8",
    "fp4": "fp8",
    "q4_k_m": "fp16",
}
_GROUPS = {
    "cnn": (
        "resnet",
        "resnext",
        "efficientnet",
        "ssd",
        "inception",
        "vgg",
        "alexnet",
        "mask r-cnn",
        "convnet",
        "yolo",
        "unet",
    ),
    "transformer": ("bert", "gpt", "transformer", "opt-", "llama", "mistral", "falcon", "gnmt", "t5", "vit"),
}


def family_key(model: str, task: str, unit: str) -> str:
    return f"{model}|{task}|{unit}"


def group_of(key: str) -> str:
    name = key.lower()
    for group, words in _GROUPS.items():
        if any(w in name for w in words):
            return group
    return "other"


def descriptor_for(key: str, fitted: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The fitted descriptor of ``key``; else the median of its group and task in its unit, else
    in any unit; else the default."""
    if key in fitted:
        return dict(fitted[key])
    group = group_of(key)
    members = {k: v for k, v in fitted.items() if group_of(k) == group and task_of(k) == task_of(key)}
    same_unit = [v for k, v in members.items() if unit_of(k) == unit_of(key)]
    chosen = same_unit or list(members.values())
    if not chosen:
        return dict(DEFAULT_DESCRIPTOR)
    return {name: _median([m[name] for m in chosen]) for name in DEFAULT_DESCRIPTOR}


def task_of(key: str) -> str:
    parts = key.rsplit("|", 2)  # from the right: a model's name may hold a "|"
    return parts[-2] if len(parts) == 3 else ""


def unit_of(key: str) -> str:
    parts = key.rsplit("|", 2)
    return parts[-1] if len(parts) == 3 else ""


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])
