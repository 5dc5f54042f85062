"""Accelerator memory of one step: the traced peak, split by what holds it at that moment.

A training step's peak is either in the forward/backward passes (activations saved for
backward still live, gradients arriving) or in the optimizer step (all gradients plus the
optimizer's temporaries). Optimizer state exists through every step but the first, so it is
added to the passes' peak. Each part is what was live at the peak: ``gradients`` is the
gradient memory allocated by then, which can be less than one full set (see
``Profile.gradient_bytes`` for that).
"""

from __future__ import annotations

import torch

from perdollar.profile.model import MemoryBreakdown
from perdollar.profile.tracer import TraceResult


def _unique_bytes(tensors: list[torch.Tensor]) -> float:
    seen: dict[int, int] = {}
    for tensor in tensors:
        seen.setdefault(int(tensor.untyped_storage()._cdata), int(tensor.untyped_storage().nbytes()))
    return float(sum(seen.values()))


def memory_breakdown(trace: TraceResult, kind: str) -> MemoryBreakdown:
    passes = trace.passes_peak
    weights = passes.bytes_of(trace.weight_serials)
    if kind == "inference" or trace.optimizer_peak is None:
        rest = passes.peak - weights
        if kind == "inference":
            # No saved tensors: what is live beside the weights is a layer's inputs and outputs.
            return MemoryBreakdown(
                weights=weights, gradients=0.0, optimizer_state=0.0, activations=rest, workspace=0.0
            )
    state = trace.optimizer_state_bytes
    optimizer = trace.optimizer_peak
    # The optimizer step runs on flat copies of the weights: count the weights once.
    optimizer_total = optimizer.peak - optimizer.bytes_of(trace.flat_weight_serials) if optimizer else 0
    if optimizer is None or passes.peak + state >= optimizer_total:
        snapshot, state_outside, peak = passes, state, passes.peak
    else:
        snapshot, state_outside, peak = optimizer, 0.0, optimizer_total
    weights = snapshot.bytes_of(trace.weight_serials)
    gradients = snapshot.bytes_of(trace.gradient_serials)
    activations = snapshot.bytes_of(trace.saved_serials - trace.gradient_serials)
    state_inside = snapshot.bytes_of(trace.optimizer_serials)
    workspace = peak - weights - gradients - activations - state_inside
    return MemoryBreakdown(
        weights=float(weights),
        gradients=float(gradients),
        optimizer_state=float(state_outside + state_inside),
        activations=float(activations),
        workspace=float(workspace),
    )


def gradient_allreduce_bytes(trace: TraceResult) -> float:
    """What one data-parallel all-reduce moves per step: every trainable parameter's gradient."""
    return _unique_bytes([p for p in trace.runner.model.parameters() if p.requires_grad])
